"""Side sampler: a separate process recording the target gateway's memory, CPU and queue, row by row.

Public API: targets.ProcessTreeTarget / PatternTarget / CgroupTarget / Target (in-process readings),
launch.start_sampler / stop_sampler (subprocess), options.SamplerOptions. Nothing here runs load.
"""
