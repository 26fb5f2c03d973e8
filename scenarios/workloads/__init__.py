"""What a run's agents send: the workload's options, file, values, datasets, traces and synthetic text."""
