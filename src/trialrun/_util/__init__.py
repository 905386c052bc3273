"""The small helpers every stage shares, each with one job: reading and writing the files users hand trialrun
(`files`, `safe_read`, `yaml_read`, `toml_read`), text safe to print (`display`), provider retry delays (`retry`),
which tools run shell commands (`command_tools`),
daemon worker threads (`workers`), per-process objects that a fork does not inherit (`per_process`), the workdir
as the agent found it (`workspace`), and the first layout's module names (`moved`).

May import: the standard library and trialrun's dependencies, never another part of trialrun (it is the floor
every other package stands on; tests/core/test_import_direction.py holds the order).
"""
