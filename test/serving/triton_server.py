"""A Triton server for the serving checks: a model repository of Kiln
models, the server started on free loopback ports with the Kiln backend, and
always stopped.

Triton comes from PyPI's nvidia-pytriton (its bundled tritonserver binary),
installed by scripts/setup.sh into build/venv-triton with tritonclient; the
checks run under that environment's Python.
"""
import contextlib
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "models")
sys.path.insert(0, MODELS)


def pytriton_root():
    """The folder of the nvidia-pytriton package in this Python."""
    import importlib.util
    spec = importlib.util.find_spec("pytriton")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("nvidia-pytriton is not installed in this Python "
                 "(scripts/setup.sh installs it into build/venv-triton)")
    return list(spec.submodule_search_locations)[0]


def tritonserver_binary():
    return os.path.join(pytriton_root(), "tritonserver", "bin", "tritonserver")


def tritonserver_library():
    """libtritonserver.so as the wheel names it (auditwheel adds a hash)."""
    libs = os.path.join(os.path.dirname(pytriton_root()), "nvidia_pytriton.libs")
    found = glob.glob(os.path.join(libs, "libtritonserver*.so"))
    if not found:
        sys.exit(f"no libtritonserver*.so under {libs}")
    return found[0]


def backend_directory(work, backend):
    """A backend directory holding `backend` as kiln/libtriton_kiln.so."""
    folder = os.path.join(work, "backends", "kiln")
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(folder, "libtriton_kiln.so")
    if not os.path.exists(link):
        os.symlink(os.path.abspath(backend), link)
    return os.path.dirname(folder)


def add_model(repository, name, config, files):
    """Adds model `name` with `config` (config.pbtxt text) and `files`
    (name in version folder 1 -> path to link there)."""
    version = os.path.join(repository, name, "1")
    os.makedirs(version, exist_ok=True)
    with open(os.path.join(repository, name, "config.pbtxt"), "w") as f:
        f.write(config)
    for file, path in files.items():
        os.symlink(os.path.abspath(path), os.path.join(version, file))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running tritonserver: `http` and `grpc` are its addresses."""

    def __init__(self, process, http_port, grpc_port, log):
        self.process = process
        self.http = f"127.0.0.1:{http_port}"
        self.grpc = f"127.0.0.1:{grpc_port}"
        self.log = log

    def get(self, path):
        with urllib.request.urlopen(f"http://{self.http}{path}",
                                    timeout=10) as r:
            return r.status, r.read()

    def model_state(self, name):
        """(state, reason) of model `name` in the repository index, or
        None while the server does not answer or lists no state."""
        request = urllib.request.Request(
            f"http://{self.http}/v2/repository/index", data=b"{}",
            method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                index = json.loads(r.read())
        except OSError:
            return None
        for entry in index:
            if entry.get("name") == name and "state" in entry:
                return entry["state"], entry.get("reason", "")
        return None

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def rss_kib(self):
        """The server process's resident memory, in KiB."""
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


@contextlib.contextmanager
def running_server(repository, backends, log, models, extra=(),
                   timeout=600):
    """Starts tritonserver over `repository` and waits until each of
    `models` is ready (or the server dies, or `timeout` passes); stops it on
    leaving, whatever happens."""
    http_port, grpc_port, metrics_port = free_port(), free_port(), free_port()
    cmd = [tritonserver_binary(), f"--model-repository={repository}",
           f"--backend-directory={backends}", f"--http-port={http_port}",
           f"--grpc-port={grpc_port}", f"--metrics-port={metrics_port}",
           "--http-address=127.0.0.1", "--grpc-address=127.0.0.1",
           "--allow-metrics=false", "--exit-on-error=false",
           "--log-verbose=1", *extra]
    with open(log, "w") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    server = Server(process, http_port, grpc_port, log)
    try:
        deadline = time.time() + timeout
        waiting = list(models)
        while waiting:
            if process.poll() is not None:
                raise RuntimeError(f"tritonserver exited with "
                                   f"{process.returncode}; log {log}")
            if time.time() > deadline:
                raise RuntimeError(f"models {waiting} not ready after "
                                   f"{timeout} s; log {log}")
            try:
                status, _ = server.get(f"/v2/models/{waiting[0]}/ready")
                if status == 200:
                    waiting.pop(0)
                    continue
            except OSError:
                pass
            # A model that failed to load is never ready: say why at once.
            state = server.model_state(waiting[0])
            if state and state[0] == "UNAVAILABLE":
                raise RuntimeError(f"model {waiting[0]} failed to load: "
                                   f"{state[1]}; log {log}")
            time.sleep(0.5)
        yield server
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
