"""Compares a resumed run's steps with the same steps of an uninterrupted
run (zb-run --report-format json): exact losses, same step numbers."""
import json
import sys

full = {s["step"]: s["loss"] for s in json.load(open(sys.argv[1]))["steps"]}
resumed = json.load(open(sys.argv[2]))["steps"]
same = all(full.get(s["step"]) == s["loss"] for s in resumed)
print(f"resumed steps {resumed[0]['step']}-{resumed[-1]['step']}: losses "
      f"{'identical' if same else 'DIFFER'}")
sys.exit(0 if same else 1)
