"""Provenance: which commit a report names."""
from compare.comparison.environment import PROJECT_ROOT, git_state


def test_an_explicit_commit_wins_over_the_checkouts_own_git(monkeypatch):
    # a tree copied to the GPU machine may carry a stale .git; the commit it was copied from is passed in
    monkeypatch.setenv("KERNEL_AB_GIT_COMMIT", "0123456789abcdef")
    monkeypatch.delenv("KERNEL_AB_GIT_DIRTY", raising=False)
    assert git_state(PROJECT_ROOT) == ("0123456789abcdef", False)
    monkeypatch.setenv("KERNEL_AB_GIT_DIRTY", "1")
    assert git_state(PROJECT_ROOT) == ("0123456789abcdef", True)


def test_without_it_a_folder_outside_any_checkout_has_no_commit(monkeypatch, tmp_path):
    monkeypatch.delenv("KERNEL_AB_GIT_COMMIT", raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert git_state(tmp_path) == ("", False)
