"""`python -m kernel_ab ...` is `kernel-ab ...`. Also run as a script: the supervisor starts its child with the
same sys.argv[0], this file's path."""
import os
import sys
from pathlib import Path

if not __package__:   # run as a script: the folder above this package is where kernel_ab imports from
    sys.path[0] = str(Path(__file__).resolve().parents[1])
os.environ.setdefault("KERNEL_AB_PROG", "kernel-ab")   # the command's name in its messages, as typed

from kernel_ab import cli  # noqa: E402 - after sys.path is set

cli()
