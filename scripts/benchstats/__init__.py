"""The numbers of scripts/bench: it starts the servers and runs the clients, saving their raw
output in a results directory; this package reads that directory (parsing, medians over rounds,
ratios, CPU per call, the targets) and prints the table. Standard library only, so the system
python3 runs it: `python3 -m benchstats report RESULTS_DIR` with scripts/ on PYTHONPATH.
"""
