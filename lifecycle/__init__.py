"""Starting, watching and stopping the processes the kit launches (a target gateway, an ACP agent).
Process plumbing only: no measurement, and nothing of the run orchestrator.
"""
