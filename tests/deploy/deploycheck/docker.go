package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// instruction is one Dockerfile instruction with its continuation lines joined.
type instruction struct {
	line int
	op   string // upper case: FROM, RUN, COPY, ...
	args string
}

type stage struct {
	name, image string
	instrs      []instruction
}

// parseDockerfile splits a Dockerfile into stages. Comments and blank lines are dropped;
// backslash continuations are joined; ARG values before the first FROM are substituted into
// FROM lines (as docker does).
func parseDockerfile(text string) ([]stage, map[string]string, error) {
	var instrs []instruction
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(text, "\n") {
		l := strings.TrimSpace(raw)
		if cur.Len() == 0 && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(l, "#") {
			continue // a comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\") + " ")
			continue
		}
		cur.WriteString(l)
		full := cur.String()
		cur.Reset()
		op, args, _ := strings.Cut(full, " ")
		instrs = append(instrs, instruction{start, strings.ToUpper(op), strings.TrimSpace(args)})
	}
	if cur.Len() > 0 {
		return nil, nil, fmt.Errorf("Dockerfile ends inside a continued line")
	}
	globalArgs := map[string]string{}
	var stages []stage
	for _, in := range instrs {
		switch {
		case in.op == "ARG" && len(stages) == 0:
			k, v, _ := strings.Cut(in.args, "=")
			globalArgs[k] = v
		case in.op == "FROM":
			f := strings.Fields(in.args)
			s := stage{}
			var img []string
			for i := 0; i < len(f); i++ {
				if strings.HasPrefix(f[i], "--") {
					continue
				}
				if strings.EqualFold(f[i], "AS") && i+1 < len(f) {
					s.name = f[i+1]
					break
				}
				img = append(img, f[i])
			}
			s.image = os.Expand(strings.Join(img, " "), func(k string) string { return globalArgs[k] })
			stages = append(stages, s)
		default:
			if len(stages) == 0 {
				return nil, nil, fmt.Errorf("line %d: %s before FROM", in.line, in.op)
			}
			stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
		}
	}
	return stages, globalArgs, nil
}

func readPackageList(path string) ([]string, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	var pkgs []string
	for _, l := range strings.Split(string(b), "\n") {
		if i := strings.Index(l, "#"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" {
			pkgs = append(pkgs, l)
		}
	}
	return pkgs, string(b), nil
}

// buildTools are packages that must never reach the runtime image.
var buildTools = regexp.MustCompile(`^(build-essential|gcc.*|g\+\+.*|cpp|clang.*|cmake|make|pkg-config|golang.*|protobuf-compiler.*|.*-dev)$`)

// stageTextOf joins the arguments of a stage's instructions of one kind.
func stageTextOf(s stage, op string) string {
	var parts []string
	for _, in := range s.instrs {
		if in.op == op {
			parts = append(parts, in.args)
		}
	}
	return strings.Join(parts, "\n")
}

// runDockerfile lints the Dockerfile structurally (docker itself cannot run in CI): two stages on
// Debian 12, dependencies only from the shared package lists through scripts/install-deps.sh,
// the CMake build with tests off, and a runtime stage without compilers, sources or -dev
// packages that carries the binary and a default config.
func runDockerfile(c *checker, args []string) {
	fs := flag.NewFlagSet("dockerfile", flag.ExitOnError)
	dockerfile := fs.String("dockerfile", "Dockerfile", "Dockerfile")
	scripts := fs.String("scripts", "scripts", "directory with install-deps.sh and the package lists")
	fs.Parse(args)
	b, err := os.ReadFile(*dockerfile)
	if err != nil {
		c.fatal(err)
		return
	}
	stages, globalArgs, err := parseDockerfile(string(b))
	if err != nil {
		c.fatal(err)
		return
	}
	// An optional `nccl` stage between them fetches NCCL for the probes (NCCL_WHEEL); the runtime
	// stage takes only its /out/ directory.
	if len(stages) == 3 {
		nccl := stages[1]
		c.check(nccl.name == "nccl", "the middle stage is %q, want nccl", nccl.name)
		c.check(regexp.MustCompile(`install-deps\.sh\s+\S*packages-nccl\.txt`).MatchString(stageTextOf(nccl, "RUN")),
			"the nccl stage does not install its packages with install-deps.sh and packages-nccl.txt")
		stages = []stage{stages[0], stages[2]}
	}
	if !c.check(len(stages) == 2, "want 2 stages (build, runtime) and optionally nccl, got %d", len(stages)) {
		return
	}
	build, runtime := stages[0], stages[1]
	c.check(build.name == "build" && runtime.name == "runtime", "stage names %q, %q", build.name, runtime.name)
	debian12 := regexp.MustCompile(`^debian:(12|bookworm)(-slim)?(@sha256:[0-9a-f]{64})?$`)
	for _, s := range stages {
		c.check(debian12.MatchString(s.image), "stage %s is based on %q, want debian:12/bookworm", s.name, s.image)
	}
	// One base for both stages, pinned by digest in a build argument (a rebuild gets the same
	// base; the offline build substitutes its own).
	pinned := regexp.MustCompile(`^debian:(12|bookworm)-slim@sha256:[0-9a-f]{64}$`)
	c.check(pinned.MatchString(globalArgs["BASE_IMAGE"]), "ARG BASE_IMAGE=%q, want debian:12-slim pinned by @sha256 digest",
		globalArgs["BASE_IMAGE"])
	for _, in := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(in), "FROM ") {
			c.check(strings.Contains(in, "${BASE_IMAGE}"), "%q does not use the pinned BASE_IMAGE", in)
		}
	}
	text := string(b)
	c.check(!regexp.MustCompile(`(?m)apt(-get)?\s+install`).MatchString(text),
		"the Dockerfile installs packages itself; the lists live only in scripts/packages-*.txt")

	buildList, buildText, err := readPackageList(filepath.Join(*scripts, "packages-build.txt"))
	if err != nil {
		c.fatal(err)
		return
	}
	runtimeList, _, err := readPackageList(filepath.Join(*scripts, "packages-runtime.txt"))
	if err != nil {
		c.fatal(err)
		return
	}

	// ---------------------------------------------------------------- build stage
	stageText := func(s stage, ops ...string) string {
		var parts []string
		for _, in := range s.instrs {
			for _, op := range ops {
				if in.op == op {
					parts = append(parts, in.args)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	bRun := stageText(build, "RUN")
	bCopy := stageText(build, "COPY")
	c.check(strings.Contains(bCopy, "scripts/install-deps.sh") && strings.Contains(bCopy, "scripts/packages-build.txt"),
		"build stage does not copy install-deps.sh and packages-build.txt")
	c.check(regexp.MustCompile(`install-deps\.sh\s+\S*packages-build`).MatchString(bRun),
		"build stage does not run install-deps.sh on (a part of) packages-build.txt")
	if strings.Contains(bRun, "/^# test-only/,$d") {
		c.check(strings.Contains(buildText, "\n# test-only"),
			"the Dockerfile cuts packages-build.txt at '# test-only', which the list no longer has")
		cut := buildText[:strings.Index(buildText, "\n# test-only")]
		c.check(strings.Contains(cut, "\ncmake") && strings.Contains(cut, "build-essential"),
			"the build-only part of packages-build.txt lacks the compilers")
	}
	c.check(regexp.MustCompile(`cmake\s+-S\s+\.\s+-B\s+\S+`).MatchString(bRun), "build stage does not configure with CMake")
	c.check(strings.Contains(bRun, "-DNCCL_TRIAGE_BUILD_TESTS=OFF"), "build stage builds the tests")
	c.check(regexp.MustCompile(`cmake\s+--build\s+\S+\s+--target\s+nccl-triage`).MatchString(bRun),
		"build stage does not build the nccl-triage target")
	c.check(strings.Contains(bRun, "--dump-config"), "the default config is not produced by the binary (--dump-config)")

	// ---------------------------------------------------------------- runtime stage
	rRun := stageText(runtime, "RUN")
	c.check(regexp.MustCompile(`install-deps\.sh\s+\S*packages-runtime\.txt`).MatchString(rRun),
		"runtime stage does not run install-deps.sh on packages-runtime.txt")
	for _, in := range runtime.instrs {
		switch in.op {
		case "COPY", "ADD":
			c.check(in.op == "COPY", "line %d: ADD in the runtime stage", in.line)
			f := strings.Fields(in.args)
			from := ""
			var srcs []string
			for _, a := range f[:len(f)-1] {
				if strings.HasPrefix(a, "--from=") {
					from = strings.TrimPrefix(a, "--from=")
				} else if !strings.HasPrefix(a, "--") {
					srcs = append(srcs, a)
				}
			}
			for _, s := range srcs {
				if from == "" {
					c.check(s == "scripts/install-deps.sh" || s == "scripts/packages-runtime.txt",
						"line %d: runtime stage copies %q from the build context", in.line, s)
				} else if from == "nccl" {
					c.check(s == "/out/" && f[len(f)-1] == "/opt/nccl-triage/nccl/",
						"line %d: runtime stage copies %q from the nccl stage (only /out/ to /opt/nccl-triage/nccl/)", in.line, s)
				} else {
					c.check(from == "build", "line %d: copies from stage %q", in.line, from)
					c.check(s == "/build/nccl-triage" || s == "/build/nccl-triage-server" || s == "/build/config.yaml" ||
						s == "/stage/usr/share/nccl-triage",
						"line %d: runtime stage copies %q from the build stage (only the two executables, the config and the data files)", in.line, s)
				}
			}
		case "RUN":
			for _, tool := range []string{"cmake ", "make ", "g++", "gcc ", "go build"} {
				c.check(!strings.Contains(in.args, tool), "line %d: runtime stage runs %q", in.line, strings.TrimSpace(tool))
			}
		}
	}
	copies := stageText(runtime, "COPY")
	c.check(strings.Contains(copies, "/build/nccl-triage /usr/bin/nccl-triage"), "the binary is not installed as /usr/bin/nccl-triage")
	// The server runs probes and workload lookups with the small executable beside it.
	c.check(strings.Contains(copies, "/build/nccl-triage-server /usr/bin/nccl-triage-server"),
		"the server is not installed as /usr/bin/nccl-triage-server (beside /usr/bin/nccl-triage)")
	c.check(regexp.MustCompile(`nccl-triage-server (agent|coordinator) --help`).MatchString(rRun),
		"the runtime stage never starts the server (e.g. `nccl-triage-server coordinator --help`)")
	c.check(strings.Contains(copies, "/etc/nccl-triage/config.yaml"), "no default config at /etc/nccl-triage/config.yaml")
	c.check(strings.Contains(stageText(runtime, "ENTRYPOINT"), "/usr/bin/nccl-triage"), "the entrypoint is not the binary")
	labels := stageText(runtime, "LABEL")
	for _, k := range []string{"title", "description", "source", "documentation", "version", "revision", "base.name"} {
		c.check(strings.Contains(labels, "org.opencontainers.image."+k+"="), "runtime stage lacks the OCI label org.opencontainers.image.%s", k)
	}
	// .dockerignore: the build context has no tests, fuzz targets, benchmarks or local state.
	di, err := os.ReadFile(filepath.Join(filepath.Dir(*dockerfile), ".dockerignore"))
	if c.check(err == nil, ".dockerignore: %v", err) {
		ignored := map[string]bool{}
		for _, l := range strings.Split(string(di), "\n") {
			ignored[strings.TrimSuffix(strings.TrimSpace(l), "/")] = true
		}
		for _, p := range []string{".git", "build", "tests", "fuzz", "bench"} {
			c.check(ignored[p], ".dockerignore does not exclude %s", p)
		}
	}
	c.check(!regexp.MustCompile(`(?m)^COPY\s+(tests|fuzz|bench)`).MatchString(string(b)), "the Dockerfile copies test code")
	c.check(strings.Contains(rRun, "--uid 65532"), "no non-root user (65532) for the coordinator")
	c.check(strings.Contains(stageText(runtime, "EXPOSE"), "9500") && strings.Contains(stageText(runtime, "EXPOSE"), "9501") &&
		strings.Contains(stageText(runtime, "EXPOSE"), "9502"), "EXPOSE lacks the contract ports")
	for _, u := range strings.Fields(stageText(runtime, "USER")) {
		c.check(u == "root" || u == "0", "the image's default user is %q; the agent needs root (the chart drops it for the coordinator)", u)
	}

	// ---------------------------------------------------------------- the package lists
	c.check(len(runtimeList) > 0, "packages-runtime.txt is empty")
	for _, p := range runtimeList {
		c.check(!buildTools.MatchString(p), "packages-runtime.txt has build tool or -dev package %q", p)
		// A runtime package must be a real Debian 12 package: the build machine has it installed
		// (as a dependency of the -dev packages in packages-build.txt).
		out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", p).Output()
		c.check(err == nil && string(out) == "install ok installed",
			"runtime package %q is not installed here (wrong name for Debian 12?)", p)
	}
	inBuild := map[string]bool{}
	for _, p := range buildList {
		inBuild[p] = true
	}
	for _, p := range runtimeList {
		c.check(!inBuild[p], "%q is in both lists; runtime libraries come in through the -dev packages", p)
	}
	// install-deps.sh reads any list given to it.
	sh, err := os.ReadFile(filepath.Join(*scripts, "install-deps.sh"))
	if err == nil {
		c.check(strings.Contains(string(sh), `lists=("$@")`), "install-deps.sh does not take list files as arguments")
	} else {
		c.fatal(err)
	}
}

// runRuntimeLibs checks that every shared library the binary loads comes from a package of
// packages-runtime.txt or from one of their dependencies (what apt installs with them), so the
// runtime image can start the binary.
func runRuntimeLibs(c *checker, args []string) {
	fs := flag.NewFlagSet("runtime-libs", flag.ExitOnError)
	binaries := fs.String("binary", "", "the nccl-triage binary and its module, comma-separated")
	list := fs.String("runtime-list", "", "packages-runtime.txt")
	fs.Parse(args)
	pkgs, _, err := readPackageList(*list)
	if err != nil {
		c.fatal(err)
		return
	}
	closure := dependencyClosure(pkgs)
	type lib struct{ soname, path string }
	var libs []lib
	seen := map[string]bool{}
	for _, binary := range strings.Split(*binaries, ",") {
		out, err := exec.Command("ldd", binary).Output()
		if err != nil {
			c.fatal(fmt.Errorf("ldd %s: %v", binary, err))
			return
		}
		for _, l := range strings.Split(string(out), "\n") {
			f := strings.Fields(l)
			if len(f) < 3 || f[1] != "=>" {
				continue
			}
			if !c.check(f[2] != "not", "%s (needed by %s) is not found", f[0], binary) {
				continue
			}
			if !seen[f[2]] {
				seen[f[2]] = true
				libs = append(libs, lib{f[0], f[2]})
			}
		}
	}
	c.check(len(libs) > 3, "ldd listed only %d libraries", len(libs))
	// One dpkg-query for every path variant of every library (usrmerge: /lib vs /usr/lib).
	var paths []string
	variants := map[string][]string{}
	for _, l := range libs {
		v := []string{l.path}
		if real, err := filepath.EvalSymlinks(l.path); err == nil && real != l.path {
			v = append(v, real)
		}
		for _, p := range append([]string(nil), v...) {
			if strings.HasPrefix(p, "/usr/") {
				v = append(v, strings.TrimPrefix(p, "/usr"))
			} else {
				v = append(v, "/usr"+p)
			}
		}
		variants[l.path] = v
		paths = append(paths, v...)
	}
	owner := map[string]string{}
	sout, _ := exec.Command("dpkg-query", append([]string{"-S"}, paths...)...).Output()
	for _, line := range strings.Split(string(sout), "\n") {
		pkgs, path, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		pkg, _, _ := strings.Cut(strings.Split(pkgs, ",")[0], ":")
		owner[strings.TrimSpace(path)] = strings.TrimSpace(pkg)
	}
	for _, l := range libs {
		pkg := ""
		for _, v := range variants[l.path] {
			if owner[v] != "" {
				pkg = owner[v]
				break
			}
		}
		if !c.check(pkg != "", "no Debian package owns %s", l.path) {
			continue
		}
		c.check(closure[pkg], "%s comes from %s, which packages-runtime.txt does not bring in", l.soname, pkg)
	}
}

// dependencyClosure follows Depends and Pre-Depends of installed packages (first alternative
// that is installed), as apt would when installing the list. One dpkg-query reads them all.
func dependencyClosure(roots []string) map[string]bool {
	out, _ := exec.Command("dpkg-query", "-W", "-f=${Package}\t${Status}\t${Depends}, ${Pre-Depends}\n").Output()
	installed := map[string]bool{}
	deps := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.SplitN(l, "\t", 3)
		if len(f) == 3 && f[1] == "install ok installed" {
			installed[f[0]] = true
			deps[f[0]] += f[2] + ","
		}
	}
	seen := map[string]bool{}
	queue := append([]string(nil), roots...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		for _, dep := range strings.Split(deps[p], ",") {
			for _, alt := range strings.Split(dep, "|") {
				name := strings.Fields(alt)
				if len(name) == 0 {
					continue
				}
				n, _, _ := strings.Cut(name[0], ":")
				if installed[n] {
					queue = append(queue, n)
					break
				}
			}
		}
	}
	return seen
}
