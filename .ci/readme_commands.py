"""Print the README's first two commands (the first ```bash block), one a line, for .ci/run to run as written."""
import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def commands(text: str) -> list[str]:
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    if not block:
        sys.exit("README.md has no ```bash block")
    found = [line.strip() for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if len(found) != 2:
        sys.exit(f"README.md's first ```bash block should hold exactly two commands, found {len(found)}")
    return found


if __name__ == "__main__":
    print("\n".join(commands(README.read_text())))
