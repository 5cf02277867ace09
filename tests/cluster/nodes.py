"""Two Ray nodes on this machine for the cluster test, started and stopped by process id.

`ray stop` stops every Ray process of the machine (other users' clusters too), so each node
here is a `ray start --block` child in its own temp dir and session; stopping it kills the
process tree it started (`/proc`, no psutil needed), by pid.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from typing import Dict, List, Optional


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def processes() -> Dict[int, tuple]:
    """pid -> (parent pid, command line) of every process of this machine."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # it ended meanwhile
            continue
        if fields[0] != "Z":
            table[int(entry)] = (int(fields[1]), cmd)
    return table


def tree(pid: int) -> Dict[int, str]:
    """`pid` and its descendants: pid -> command line."""
    table = processes()
    found = {pid: table[pid][1]} if pid in table else {}
    todo = [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, cmd) in table.items():
            if ppid == parent and child not in found:
                found[child] = cmd
                todo.append(child)
    return found


def alive(pids: Dict[int, str]) -> List[int]:
    """Those of `pids` still running the same command line."""
    table = processes()
    return [p for p, cmd in pids.items() if p in table and table[p][1] == cmd]


class Node:
    """One `ray start --block` node in temp dir `temp_dir`, with `num_cpus` (logical) CPUs."""

    def __init__(self, ray: str, env: Dict[str, str], temp_dir: str, head_port: int,
                 head: bool, resources: Optional[str] = None, num_cpus: int = 1) -> None:
        ports = ["--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port",
                 "--dashboard-agent-grpc-port", "--runtime-env-agent-port", "--metrics-export-port"]
        args = [ray, "start", "--num-cpus", str(num_cpus), "--disable-usage-stats", "--temp-dir",
                temp_dir, "--block"]
        for flag in ports:
            args += [flag, str(free_port())]
        if head:
            args += ["--head", "--port", str(head_port), "--include-dashboard=false",
                     "--ray-client-server-port", str(free_port())]
        else:
            args += ["--address", f"127.0.0.1:{head_port}"]
        if resources:
            args += ["--resources", resources]
        self.temp_dir = temp_dir
        self.log = open(os.path.join(temp_dir, "ray_start.log"), "w")
        self.proc = subprocess.Popen(args, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.seen: Dict[int, str] = {}

    def wait_listening(self, port: int, timeout: float = 120.0) -> None:
        """Until the head node accepts connections on `port`; fails with `ray start`'s own
        output when it exits or the time runs out (Ray starts slowly on a loaded machine)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                return
            except OSError:
                pass
            exited = self.proc.poll()
            if exited is not None or time.monotonic() > deadline:
                self.log.flush()
                with open(os.path.join(self.temp_dir, "ray_start.log")) as f:
                    tail = f.read()[-3000:]
                what = (f"exited with {exited}" if exited is not None
                        else f"did not listen on port {port} within {timeout:.0f} s")
                raise AssertionError(f"the head node {what}; ray start printed:\n{tail}")
            time.sleep(0.3)

    def snapshot(self) -> Dict[int, str]:
        self.seen.update(tree(self.proc.pid))
        return self.seen

    def kill(self) -> Dict[int, str]:
        """SIGKILL every process of this node (by pid); returns them."""
        for _ in range(3):  # a raylet may start a worker while we kill
            for pid in sorted(self.snapshot(), reverse=True):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.3)
        self.proc.wait(timeout=10)
        self.log.close()
        return self.seen
