"""Adds torch.distributed.pipelining's communication and FSDP actions to a
compute-only CSV of a two-rank, one-chunk schedule (stage s on rank s), as
_dump_csv writes them with format="full": UNSHARD first, SEND_F after each
F of rank 0, RECV_F before each F of rank 1, RECV_B before each I of rank 0,
SEND_B after each I of rank 1, REDUCE_GRAD last.

    add_comm_actions.py IN.csv OUT.csv
"""
import sys

rows = [line.split(",") for line in open(sys.argv[1]).read().split()]
out = []
for rank, cells in enumerate(rows):
    actions = [f"{rank}UNSHARD"]
    for cell in cells:
        kind, mb = cell[1], cell[2:]
        if kind == "F" and rank == 0:
            actions += [cell, f"{rank}SEND_F{mb}"]
        elif kind == "F":
            actions += [f"{rank}RECV_F{mb}", cell]
        elif kind == "I" and rank == 0:
            actions += [f"{rank}RECV_B{mb}", cell]
        elif kind == "I":
            actions += [cell, f"{rank}SEND_B{mb}"]
        else:
            actions.append(cell)
    actions.append(f"{rank}REDUCE_GRAD")
    out.append(",".join(actions))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
