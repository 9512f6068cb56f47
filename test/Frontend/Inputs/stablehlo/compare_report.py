#!/usr/bin/python3
"""Compares `zb-run --report-gradients --report-format json` output with a
framework reference (expected.json written by the export script).

Usage: compare_report.py REPORT.json EXPECTED.json [--loss-rtol 1e-5]
                         [--grad-rtol 1e-4] [--precision float64]
Prints one `ok`/`MISMATCH` line per quantity (relative error), then `PASS`
or `FAIL` (exit status 1).
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("expected")
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--grad-rtol", type=float, default=1e-4)
    ap.add_argument("--precision", default="float64")
    a = ap.parse_args()
    with open(a.report) as f:
        got = json.load(f)
    with open(a.expected) as f:
        want = json.load(f)[a.precision]
    ok = True

    def check(what, g, w, rtol):
        nonlocal ok
        rel = abs(g - w) / max(abs(w), 1e-30)
        ok &= rel <= rtol
        print("%s %s got %.9g want %.9g rel %.2e" %
              ("ok" if rel <= rtol else "MISMATCH", what, g, w, rel))

    check("loss", got["loss"], want["loss"], a.loss_rtol)
    grads = got.get("grad_norm", {})
    for name in sorted(set(grads) | set(want["grad_norms"])):
        if name not in grads or name not in want["grad_norms"]:
            print("MISMATCH %s only in one of the two" % name)
            ok = False
            continue
        check("grad " + name, grads[name], want["grad_norms"][name],
              a.grad_rtol)
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
