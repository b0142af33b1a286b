"""workflow/scripts/_job.py: the log and the thread pinning that start every training job."""

import json
import os
import subprocess
import sys

from conftest import REPO_ROOT

SCRIPTS = REPO_ROOT / "workflow" / "scripts"

CHILD = r"""
import json, os, sys, types
sys.path.insert(0, sys.argv[1])
import _job
light = "numpy" not in sys.modules
_job.start(types.SimpleNamespace(log=[sys.argv[2]], threads=1))
print("to the job's log", file=sys.stderr)
from threadpoolctl import threadpool_info
print(json.dumps({"light": light, "numpy": "numpy" in sys.modules,
                  "env": {v: os.environ[v] for v in _job.THREAD_VARS},
                  "blas": [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]}))
"""


def test_start_logs_then_pins_every_pool_to_the_job_threads(tmp_path):
    log = tmp_path / "job.log"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    env.update(OPENBLAS_NUM_THREADS="4", OMP_NUM_THREADS="4")  # the job's threads win
    out = subprocess.run([sys.executable, "-c", CHILD, str(SCRIPTS), str(log)],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # stderr went to the log ...
    assert log.read_text() == "to the job's log\n"  # ... line-buffered, nothing lost
    got = json.loads(out.stdout)
    assert got["light"], "importing _job must not import numpy (the variables come first)"
    assert got["numpy"]
    assert got["env"] == {
        v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                         "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")}
    assert got["blas"] and set(got["blas"]) == {1}


def test_training_scripts_start_with_it():
    """train.py, train_cv.py, trace.py call _job.start before anything imports numpy."""
    for name in ("train.py", "train_cv.py", "trace.py"):
        lines = (SCRIPTS / name).read_text().splitlines()
        code = [ln.split("  #")[0] for ln in lines if ln.startswith(("import ", "from ", "_job."))]
        assert code[:3] == ["import sys", "import _job", "_job.start(snakemake)"], name


def test_start_freezes_the_live_objects_at_exit(tmp_path):
    """The interpreter's last collections then skip them (README, "The jobs' exit"): a handler
    registered before start() runs after its freeze and sees the objects frozen."""
    child = r"""
import atexit, gc, sys, types
sys.path.insert(0, sys.argv[1])
import _job
atexit.register(lambda: print(gc.get_freeze_count(), flush=True))  # runs last (LIFO)
_job.start(types.SimpleNamespace(log=[sys.argv[2]], threads=1))
"""
    out = subprocess.run([sys.executable, "-c", child, str(SCRIPTS), str(tmp_path / "job.log")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 1000  # numpy's objects at least
