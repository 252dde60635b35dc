"""Reading files of a tagged revision out of a (bare) git directory, or out of a plain tree."""
import os
import subprocess


class GitDir:
    def __init__(self, gitdir):
        self.gitdir = gitdir
        self._cat = None
        self._cache = {}

    def _git(self, *args):
        return subprocess.run(["git", "--git-dir", self.gitdir] + list(args), check=True,
                              stdout=subprocess.PIPE).stdout.decode("utf-8", "replace")

    def tags(self):
        return [t for t in self._git("tag").split("\n") if t]

    def commit(self, rev):
        return self._git("rev-parse", rev + "^{commit}").strip()

    def files(self, rev, under=""):
        """[(path, blob id)] of rev, below the folder `under` when given."""
        args = ["ls-tree", "-r", rev]
        if under:
            args += ["--", under]
        out = []
        for line in self._git(*args).split("\n"):
            if not line:
                continue
            meta, path = line.split("\t", 1)
            _, kind, blob = meta.split()
            if kind == "blob":
                out.append((path, blob))
        return out

    def read(self, blob):
        if blob in self._cache:
            return self._cache[blob]
        if self._cat is None:
            self._cat = subprocess.Popen(["git", "--git-dir", self.gitdir, "cat-file", "--batch"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._cat.stdin.write((blob + "\n").encode())
        self._cat.stdin.flush()
        header = self._cat.stdout.readline().split()
        size = int(header[2])
        data = self._cat.stdout.read(size)
        self._cat.stdout.read(1)
        text = data.decode("utf-8", "replace")
        self._cache[blob] = text
        return text


class PlainDir:
    """A source tree on disk (an extracted release archive); rev is ignored."""

    def __init__(self, root):
        self.root = root

    def commit(self, rev):
        return "-"

    def files(self, rev, under=""):
        base = os.path.join(self.root, under)
        out = []
        for d, _, names in os.walk(base):
            for n in names:
                p = os.path.join(d, n)
                out.append((os.path.relpath(p, self.root), p))
        return out

    def read(self, blob):
        with open(blob, encoding="utf-8", errors="replace") as f:
            return f.read()
