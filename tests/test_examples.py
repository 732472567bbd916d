"""The example CI workflow: its review command is one the command line accepts, with the gates on,
and the comment it posts is the report's Markdown."""
import shlex
from pathlib import Path

import main
from tests.extras import need

yaml = need("yaml")   # pyyaml, of the test extra

WORKFLOW = Path(__file__).resolve().parent.parent / "examples" / "kernel-ab-pull-request.yml"


def _steps():
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    return [step for job in jobs.values() for step in job["steps"]]


def test_workflow_review_command_parses_with_both_revisions_and_the_gates():
    run = next(s["run"] for s in _steps() if "main.py review" in s.get("run", ""))
    command = run[run.index("python "):].split("\n    echo")[0].split("echo ")[0]
    command = (command.replace("${{ github.event.pull_request.base.sha }}", "abc123")
               .replace("${{ github.event.pull_request.head.sha }}", "def456"))
    argv = shlex.split(command.replace("\\\n", " "))
    assert argv[:2] == ["python", ".kernel-ab/main.py"]
    args = main._parser("main.py").parse_args(argv[2:])
    assert args.command == "review" and args.fail_on_numerics and args.fail_if_slower == 2
    assert (args.base, args.head, args.repo) == ("abc123", "def456", ".")
    assert str(args.out) == "kernel-ab-report"


def test_workflow_posts_report_md_and_exits_with_the_gates_status():
    steps = _steps()
    post = next(s for s in steps if "gh pr comment" in s.get("run", ""))
    assert "--body-file kernel-ab-report/report.md" in post["run"] and post["if"].startswith("always()")
    assert steps[-1]["run"] == "exit ${{ steps.review.outputs.status }}"
