"""Running the kiln CLI with --json from the benchmark scripts
(host_realmodels.py, cuda_realmodels.py)."""
import json
import subprocess
import time


def run_kiln_json(cmd, env, timeout, log, accept=(0,)):
    """Runs `cmd` (a kiln command with --json), appends it and its output to
    the file `log`, and returns (document, exit status, wall seconds): the
    document is docs/cli_json.schema.json's. Raises RuntimeError with kiln's
    last error line when the exit status is not in `accept` or stdout holds
    no document (exit 2: kiln could not read or run the model)."""
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    wall = time.time() - t0
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}\n(exit {p.returncode}, {wall:.1f} s)\n")
    try:
        doc = json.loads(p.stdout) if p.returncode in accept else None
    except ValueError:
        doc = None
    if doc is None:
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        raise RuntimeError(lines[-1][:300] if lines else f"exit {p.returncode}")
    return doc, p.returncode, wall
