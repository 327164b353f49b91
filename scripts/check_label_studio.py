"""Check `rag-eval pool --label-studio` against a real Label Studio server (not part of the test suite).

Label Studio is a Django application of its own (about 300 MB installed); it is not a dependency of
rag_eval or of its tests. Install it in a separate virtual environment and point this script at it:

    python3 -m venv /tmp/lsenv && /tmp/lsenv/bin/pip install label-studio
    .venv/bin/python scripts/check_label_studio.py /tmp/lsenv/bin/label-studio

It starts Label Studio on a free port with a fresh data folder (SQLite), then through its REST API:
creates a project with rag_eval's labelling config for a 0-3 scale (Label Studio validates it), imports
the tasks of a pool written by `rag-eval pool --label-studio` over the ocean-facts example (two
retrievers, depth 10), reads every task back and compares its data with the file, and saves one
annotation per grade (0-3). As a control, the same config broken (its grade pointing at no tag) must be
refused, so that the project's creation shows that Label Studio checked the config. It exits 0
when all of that holds, 1 otherwise, and stops the server either way.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_eval._data.judging.exports import label_studio_config  # noqa: E402

CONFIG = """\
dataset: {path: %s}
retrievers:
  - {label: bm25, adapter: bm25}
  - {label: reversed, adapter: static, params: {rankings: %s}}
top_k: 10
metrics: [ndcg@10]
output: out
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def call(base: str, token: str, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(f"{base}{path}", data=data, method=method, headers={
        "Authorization": f"Token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        text = answer.read().decode("utf-8")
    return json.loads(text) if text else None


def write_pool(folder: Path) -> Path:
    """A pool of the ocean-facts example with unjudged units: its own BM25 and the seed ranking reversed."""
    import yaml

    dataset = REPO / "datasets" / "ocean_facts.yaml"
    queries = yaml.safe_load(dataset.read_text(encoding="utf-8"))
    corpus = [passage["id"] for passage in queries["corpus"]]
    reversed_rankings = {query["id"]: list(reversed(corpus))[:10] for query in queries["queries"]}
    config = folder / "run.yaml"
    config.write_text(CONFIG % (json.dumps(str(dataset)), json.dumps(reversed_rankings)), encoding="utf-8")
    tasks = folder / "pool.tasks.json"
    subprocess.run([str(REPO / ".venv" / "bin" / "rag-eval"), "pool", str(config), "--depth", "10", "--output",
                    str(folder / "pool.csv"), "--label-studio", str(tasks), "--no-progress"], check=True, cwd=folder)
    return tasks


def main(label_studio: str) -> int:
    folder = Path(tempfile.mkdtemp(prefix="rag-eval-label-studio-"))
    tasks_file = write_pool(folder)
    tasks = json.loads(tasks_file.read_text(encoding="utf-8"))
    port, token = free_port(), secrets.token_hex(20)
    log = (folder / "label-studio.log").open("w")
    server = subprocess.Popen(
        [label_studio, "start", "--no-browser", "--port", str(port), "--data-dir", str(folder / "data"),
         "--username", "check@example.com", "--password", secrets.token_hex(12), "--user-token", token,
         "--enable-legacy-api-token"],  # the "Token ..." header this script sends (1.23 disables it by default)
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true"},
    )
    base = f"http://127.0.0.1:{port}"
    problems: list[str] = []
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                call(base, token, "GET", "/api/projects")
                break
            except urllib.error.HTTPError as refused:  # up, but refusing: no point in waiting
                print(f"Label Studio answered HTTP {refused.code}; its log: {log.name}", file=sys.stderr)
                return 1
            except (urllib.error.URLError, ConnectionError, OSError):
                if server.poll() is not None or time.monotonic() > deadline:
                    print(f"Label Studio did not start; its log: {log.name}", file=sys.stderr)
                    return 1
                time.sleep(1)
        version = call(base, token, "GET", "/api/version")
        print(f"Label Studio {version.get('release', version)} on {base}")
        project = call(base, token, "POST", "/api/projects", {
            "title": "rag_eval pool", "label_config": label_studio_config(3)})
        print(f"project {project['id']} created with rag_eval's labelling config (0-3)")
        imported = call(base, token, "POST", f"/api/projects/{project['id']}/import", tasks)
        print(f"imported: {imported.get('task_count')} tasks of the {len(tasks)} in {tasks_file.name}")
        if imported.get("task_count") != len(tasks):
            problems.append(f"imported {imported.get('task_count')} tasks, the file has {len(tasks)}")
        stored = call(base, token, "GET", f"/api/tasks?project={project['id']}&page_size=1000")
        stored = stored["tasks"] if isinstance(stored, dict) else stored
        by_id = {task["data"]["id"]: task for task in stored}
        for task in tasks:
            back = by_id.get(task["data"]["id"])
            if back is None or back["data"] != task["data"]:
                problems.append(f"task {task['data']['id']} read back as {back and back['data']!r}")
        print(f"read back: {len(stored)} tasks, {len(tasks) - len(problems)} with the data as written")
        for grade, task in zip(range(4), stored):
            annotation = call(base, token, "POST", f"/api/tasks/{task['id']}/annotations", {"result": [{
                "from_name": "grade", "to_name": "text", "type": "choices", "value": {"choices": [str(grade)]}}]})
            print(f"annotation of task {task['id']} with grade {grade}: saved as {annotation['id']}")
        # The project was accepted because the config is valid: the same config with the grade pointing at a
        # tag that does not exist is refused (Label Studio checks configs; it does not check an annotation's
        # choice against them, so that is not asked of it).
        try:
            call(base, token, "POST", "/api/projects", {
                "title": "broken", "label_config": label_studio_config(3).replace('toName="text"', 'toName="nope"')})
            problems.append("a config whose grade points at no tag was accepted: configs are not checked")
        except urllib.error.HTTPError as refused:
            print(f"the same config with toName pointing at no tag: refused with HTTP {refused.code}")
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    print("ok" if not problems else f"{len(problems)} problems")
    return 0 if not problems else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check_label_studio.py PATH/TO/label-studio")
    sys.exit(main(sys.argv[1]))
