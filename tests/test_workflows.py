"""The GitHub workflows hand out no more power than each job needs.

Read from the YAML files themselves: every job's effective permissions
(its own block, else the workflow's), checkout never leaving the token in
.git/config, every action pinned to a full commit, no trigger that runs
pull-request code with a write token, and write access only where Pages
is deployed.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
#: The only permissions a job may hold beyond reading the repository, and
#: the only job kind that may hold them: the Pages deployment.
DEPLOY = {"pages": "write", "id-token": "write"}
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def _load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on:` as True.
    if True in data:
        data["on"] = data.pop(True)
    return data


def _triggers(data: dict) -> set[str]:
    on = data["on"]
    if isinstance(on, str):
        return {on}
    return set(on)


def _steps(data: dict):
    for job_id, job in data["jobs"].items():
        for n, step in enumerate(job.get("steps", []), start=1):
            yield job_id, n, step


@pytest.fixture(params=WORKFLOWS, ids=lambda p: p.name)
def workflow(request) -> tuple[Path, dict]:
    return request.param, _load(request.param)


def test_there_are_workflows_to_check():
    names = {p.name for p in WORKFLOWS}
    assert {"ci.yml", "pages.yml"} <= names, names


def test_no_trigger_runs_pull_request_code_with_a_write_token(workflow):
    path, data = workflow
    dangerous = _triggers(data) & {"pull_request_target", "workflow_run"}
    assert not dangerous, (
        f"{path.name}: triggered by {sorted(dangerous)}; use pull_request, "
        "whose token is read-only"
    )


def test_every_job_reads_only_unless_it_deploys_pages(workflow):
    path, data = workflow
    top = data.get("permissions")
    assert top is not None and top in ({}, {"contents": "read"}), (
        f"{path.name}: workflow permissions are {top!r}; expected "
        "'contents: read' (or none) at the top, more only on a job"
    )
    for job_id, job in data["jobs"].items():
        perms = job.get("permissions", top)
        assert isinstance(perms, dict), (
            f"{path.name}: job {job_id} permissions {perms!r}; expected "
            "a mapping (never read-all/write-all)"
        )
        uses = [s.get("uses", "") for s in job.get("steps", [])]
        deploys = any(u.startswith("actions/deploy-pages@") for u in uses)
        if deploys:
            assert perms == DEPLOY, (
                f"{path.name}: deploy job {job_id} has {perms}; expected "
                f"exactly {DEPLOY}"
            )
            assert not any(u.startswith("actions/checkout@") for u in uses), (
                f"{path.name}: deploy job {job_id} checks out the "
                "repository; the job with a write token must run no "
                "repository code"
            )
        else:
            assert perms in ({}, {"contents": "read"}), (
                f"{path.name}: job {job_id} has {perms}; expected "
                "'contents: read' only (write access is the deploy job's)"
            )


def test_checkout_keeps_no_token_in_git_config(workflow):
    path, data = workflow
    checkouts = [
        (job, n, step)
        for job, n, step in _steps(data)
        if step.get("uses", "").startswith("actions/checkout@")
    ]
    for job, n, step in checkouts:
        assert (step.get("with") or {}).get("persist-credentials") is False, (
            f"{path.name}: job {job}, step {n}: checkout without "
            "'persist-credentials: false' leaves the token in .git/config "
            "for every later step"
        )


def test_every_action_is_pinned_to_a_commit_with_its_tag(workflow):
    path, data = workflow
    text = path.read_text(encoding="utf-8")
    for job, n, step in _steps(data):
        uses = step.get("uses")
        if uses is None:
            continue
        assert PINNED.match(uses), (
            f"{path.name}: job {job}, step {n}: 'uses: {uses}' is not "
            "pinned to a 40-hex commit; write OWNER/REPO@SHA # vX.Y.Z"
        )
        line = next(ln for ln in text.splitlines() if uses in ln)
        assert re.search(r"#\s*v\d", line), (
            f"{path.name}: '{line.strip()}' has no '# vX.Y.Z' comment "
            "naming the release the commit is"
        )


def _ci() -> tuple[dict, dict[str, dict]]:
    data = _load(ROOT / ".github" / "workflows" / "ci.yml")
    steps = {}
    for step in data["jobs"]["test"]["steps"]:
        steps[step.get("id") or step.get("name") or step.get("uses")] = step
    return data, steps


def test_ci_installs_the_cpu_torch_and_runs_what_a_contributor_runs():
    """`make lint` then `make pytest` (the strict build and the tests):
    together, `make test` (Makefile), as .ci/run runs it."""
    data, steps = _ci()
    assert data["jobs"]["test"]["env"]["TORCH_INDEX"].endswith("/whl/cpu")
    assert steps["lint"]["run"] == "make lint"
    assert steps["tests"]["run"] == "make pytest"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test: lint pytest$", makefile, re.M)


def test_ci_runs_once_per_change():
    """A pull request runs ci once; main is checked by pages.yml. A
    `push` trigger here would run a same-repository branch twice (its
    push and its pull request)."""
    data, _ = _ci()
    assert _triggers(data) <= {"pull_request", "workflow_dispatch"}
    assert "pull_request" in _triggers(data)
    pages = _load(ROOT / ".github" / "workflows" / "pages.yml")
    assert pages["on"]["push"]["branches"] == ["main"]


def _runs_after_a_failure(step: dict) -> bool:
    condition = str(step.get("if", ""))
    return "!cancelled()" in condition or "always()" in condition


def test_ci_reports_and_uploads_the_preview_even_when_a_check_fails():
    """The later checks, the summary and the preview run after a failed
    step (unless cancelled); the summary names each check's outcome."""
    data, steps = _ci()
    assert "if" not in steps["lint"]  # the first check: nothing before it
    for name in ("tests", "pdf"):
        assert _runs_after_a_failure(steps[name]), steps[name]
    summary = next(
        s for key, s in steps.items() if "summary" in str(key).lower()
    )
    upload = next(
        s
        for s in steps.values()
        if s.get("uses", "").startswith("actions/upload-artifact@")
    )
    for step in (summary, upload):
        assert _runs_after_a_failure(step), step
        assert "github.event_name" not in str(step.get("if", "")), step
    env = summary["env"]
    for check in ("lint", "tests", "pdf"):
        outcome = f"${{{{ steps.{check}.outcome }}}}"
        assert outcome in env.values(), (check, env)
        name = next(k for k, v in env.items() if v == outcome)
        assert f"${name}" in summary["run"], (name, summary["run"])
    assert "$GITHUB_STEP_SUMMARY" in summary["run"]
    assert "make -s site-diff BASE=HEAD^1 HEAD_SITE=site" in summary["run"]
    assert upload["with"]["name"] == "site-preview"
    assert upload["with"]["path"] == "site/"


def test_pages_builds_with_site_url_and_deploys_with_official_actions():
    data = _load(ROOT / ".github" / "workflows" / "pages.yml")
    assert _triggers(data) >= {"push"}
    assert data["on"]["push"]["branches"] == ["main"]
    build, deploy = data["jobs"]["build"], data["jobs"]["deploy"]
    assert "SITE_URL" in data["env"]  # both jobs read the one address
    uses = [s.get("uses", "").split("@")[0] for s in build["steps"]]
    assert "actions/upload-pages-artifact" in uses
    assert [s.get("uses", "").split("@")[0] for s in deploy["steps"]] == [
        "actions/configure-pages",
        "",
        "actions/deploy-pages",
    ]
    assert deploy["needs"] == "build"
    assert deploy["environment"]["name"] == "github-pages"


def test_every_handout_command_a_workflow_runs_is_one_the_cli_accepts(
    monkeypatch,
):
    """The workflows print the PDF handout with ``python -m
    lessonbuild.present``; a required option they left out failed the
    step, so CI's summary showed the PDF failed on every pull request and
    Pages never deployed. Each such line is parsed by the real CLI here,
    the printing itself left out."""
    from lessonbuild import present

    printed = []
    monkeypatch.setattr(
        present, "pdf", lambda *a, **k: printed.append((a, k)) or 1
    )
    commands = []
    for path in WORKFLOWS:
        for job_id, n, step in _steps(_load(path)):
            for line in str(step.get("run", "")).splitlines():
                if "-m lessonbuild.present" in line:
                    words = shlex.split(line)
                    commands.append((f"{path.name} {job_id} step {n}", words))
    assert commands, "no workflow prints the handout any more"
    for where, words in commands:
        args = words[words.index("-m") + 2 :]
        try:
            present.main(args)
        except SystemExit as exc:
            pytest.fail(f"{where}: {shlex.join(words)} exits {exc.code}")
    assert len(printed) == len(commands)
    for _, options in printed:
        assert Path(options["chromium"]).name.startswith("chromium")


def test_the_deploy_check_accepts_the_address_pages_serves():
    """The deploy job compares the address the site was built for with
    the one Pages serves. It retyped the address instead of reading
    SITE_URL (a custom domain, set as its own message said, still
    failed) and compared with case (configure-pages gives the host in
    lower case: an owner with capitals never deployed). Run here as the
    runner runs it, with the workflow's own SITE_URL filled in."""
    data = _load(ROOT / ".github" / "workflows" / "pages.yml")
    [check] = [s for s in data["jobs"]["deploy"]["steps"] if "run" in s]
    values = {
        "github.repository_owner": "Example-Org",
        "github.event.repository.name": "lesson-81",
    }
    built = re.sub(
        r"\$\{\{\s*([\w.]+)\s*\}\}",
        lambda m: values[m[1]],
        data["env"]["SITE_URL"],
    )

    def deploy(site_url: str, served: str):
        env = {"PATH": "/usr/bin:/bin", "SITE_URL": site_url}
        env["PAGES_URL"] = served
        return subprocess.run(
            ["bash", "-eo", "pipefail", "-c", check["run"]],
            env=env,
            capture_output=True,
            text=True,
        )

    served = "https://example-org.github.io/lesson-81"
    assert deploy(built, served).returncode == 0
    custom = "https://lesson81.example.com"
    assert deploy(custom + "/", custom).returncode == 0
    wrong = deploy(built, custom)
    assert wrong.returncode == 1
    assert f"Pages serves {custom}; set SITE_URL" in wrong.stdout
