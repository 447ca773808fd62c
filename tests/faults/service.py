"""A `neardup serve` process for the fault tests: started on a free port (optionally under a
command such as strace), called over HTTP, stopped."""
import http.client
import json
import os
import select
import signal
import subprocess
import sys


class Service:
    def __init__(self, nd, index, under=(), cwd=None):
        self.proc = subprocess.Popen([*under, nd, "serve", index, "--listen", "127.0.0.1:0", "-q"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, cwd=cwd)
        # The port chosen is the command's output; a service that neither says it nor ends within
        # a minute is a failure of its own.
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline() if ready else ""
        self.port = int(line.strip().rsplit(":", 1)[1]) if line.strip() else None
        if not ready:
            self.proc.kill()

    def call(self, method, path, body=None):
        """The status and the answer; (None, error) if the connection failed."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            c.request(method, path, body=json.dumps(body) if body is not None else None)
            r = c.getresponse()
            data = r.read()
            return r.status, json.loads(data) if data else None
        except (OSError, http.client.HTTPException, ValueError) as e:
            return None, str(e)
        finally:
            c.close()

    def must(self, method, path, body=None):
        """call(), for a script's set-up: anything but a 200 or 201 ends the script."""
        status, r = self.call(method, path, body)
        if status not in (200, 201):
            self.kill()
            sys.exit("serve answered %s to %s %s: %s" % (status, method, path, r))
        return r

    def pid(self):
        """The service's own process: the one started, or its child when started under another."""
        children = "/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)
        if os.path.exists(children):
            kids = open(children).read().split()
            if kids:
                return int(kids[0])
        return self.proc.pid

    def stop(self, sig=signal.SIGTERM):
        """Stops it; its exit code and what it said on stderr."""
        try:
            os.kill(self.pid(), sig)
        except ProcessLookupError:
            pass
        rc = self.proc.wait(timeout=300)
        return rc, self.proc.stderr.read()

    def kill(self):
        self.proc.kill()
        self.proc.wait()
