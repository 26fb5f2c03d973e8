"""The run-directory contract, the bottom layer: file and column names with their units, exit codes,
record types, CSV append/tail, unit parsing. It imports nothing of the kit; every room imports it.
"""
