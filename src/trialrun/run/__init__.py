"""Running cases: `runner` (evaluate/aevaluate: selection, concurrency, interruption), one trial on any executor
(`_trial`: setup, invoke, grade, teardown), where trials run (`executor`, and `_ray` for a Ray cluster), and a CLI
run's records from its start to its end (`_records`).

May import: everything up to `report` (cases in, results out); never the suite files, the agents in another
process, a renderer or the CLI.
"""
