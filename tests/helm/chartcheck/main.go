// Command chartcheck asserts on a chart that helm installed: the objects a given set of values
// must produce, the agent's privileges and mounts, probes, RBAC verbs, the verbatim config, the
// token Secret, monitoring objects and the shared rules/dashboard files. Its input is what helm
// itself says (`helm get manifest`, `helm get values --all -o json`).
//
//	chartcheck --manifests rendered.yaml --values merged.json --chart helm/nccl-triage \
//	           --mode default|all-on|standalone|upgrade [--release NAME] [--kept-token T] \
//	           [--extract-config config.yaml]
//	chartcheck --rbac-code agent --manifests all-on.yaml
//	chartcheck --readme-values helm/nccl-triage/README.md --chart helm/nccl-triage
//	chartcheck --config-subset rendered-config.yaml --config-dump dumped.yaml
//
// Every failed assertion is printed; the exit code is 1 when any failed. The final line is
// "N passed, M failed".
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

type checker struct {
	passed, failed int
	scope          string
}

func (c *checker) check(ok bool, format string, args ...interface{}) bool {
	if ok {
		c.passed++
		return true
	}
	c.failed++
	fmt.Printf("FAIL [%s] %s\n", c.scope, fmt.Sprintf(format, args...))
	return false
}

type obj = map[string]interface{}

// get walks a dotted path; list elements are addressed by index ("containers.0.name").
func get(o interface{}, p string) interface{} {
	cur := o
	for _, k := range strings.Split(p, ".") {
		switch t := cur.(type) {
		case map[string]interface{}:
			cur = t[k]
		case []interface{}:
			var i int
			if _, err := fmt.Sscanf(k, "%d", &i); err != nil || i < 0 || i >= len(t) {
				return nil
			}
			cur = t[i]
		default:
			return nil
		}
	}
	return cur
}

func str(o interface{}, p string) string {
	s, _ := get(o, p).(string)
	return s
}

func list(o interface{}, p string) []interface{} {
	l, _ := get(o, p).([]interface{})
	return l
}

func loadManifests(file string) ([]obj, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []obj
	for {
		var o obj
		err := dec.Decode(&o)
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		if o != nil {
			out = append(out, o)
		}
	}
	return out, nil
}

// normalize turns YAML-decoded values into the JSON model (float64 numbers) for comparisons.
func normalize(v interface{}) interface{} {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	var out interface{}
	if err := json.Unmarshal(b, &out); err != nil {
		return err.Error()
	}
	return out
}

type set struct {
	objs []obj
}

func (s set) find(kind, name string) obj {
	for _, o := range s.objs {
		if o["kind"] == kind && str(o, "metadata.name") == name {
			return o
		}
	}
	return nil
}

func (s set) byKind(kind string) []obj {
	var out []obj
	for _, o := range s.objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

func (s set) inventory() []string {
	var out []string
	for _, o := range s.objs {
		out = append(out, fmt.Sprintf("%s/%s", o["kind"], str(o, "metadata.name")))
	}
	sort.Strings(out)
	return out
}

func container(pod obj, name string) obj {
	for _, c := range list(pod, "spec.template.spec.containers") {
		if m, ok := c.(obj); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

func envFieldRef(c obj, name string) string {
	for _, e := range list(c, "env") {
		if str(e, "name") == name {
			return str(e, "valueFrom.fieldRef.fieldPath")
		}
	}
	return ""
}

func mount(c obj, mountPath string) obj {
	for _, m := range list(c, "volumeMounts") {
		if str(m, "mountPath") == mountPath {
			return m.(obj)
		}
	}
	return nil
}

func volume(pod obj, name string) obj {
	for _, v := range list(pod, "spec.template.spec.volumes") {
		if str(v, "name") == name {
			return v.(obj)
		}
	}
	return nil
}

func port(c obj, name string) float64 {
	for _, p := range list(c, "ports") {
		if str(p, "name") == name {
			f, _ := normalize(get(p, "containerPort")).(float64)
			return f
		}
	}
	return 0
}

func strs(l []interface{}) []string {
	var out []string
	for _, e := range l {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

func listenPort(listen string) float64 {
	var p float64
	fmt.Sscanf(listen[strings.LastIndex(listen, ":")+1:], "%g", &p)
	return p
}

// rbacRules flattens a ClusterRole into "group/resource:verb" strings ("nonResource:/path:verb"
// for a non-resource URL).
func rbacRules(role obj) []string {
	var out []string
	for _, r := range list(role, "rules") {
		for _, u := range strs(list(r, "nonResourceURLs")) {
			for _, v := range strs(list(r, "verbs")) {
				out = append(out, fmt.Sprintf("nonResource:%s:%s", u, v))
			}
		}
		for _, g := range strs(list(r, "apiGroups")) {
			for _, res := range strs(list(r, "resources")) {
				for _, v := range strs(list(r, "verbs")) {
					out = append(out, fmt.Sprintf("%s/%s:%s", g, res, v))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func main() {
	manifests := flag.String("manifests", "", "rendered chart")
	valuesFile := flag.String("values", "", "merged values (helm get values --all -o json)")
	chartDir := flag.String("chart", "", "chart directory")
	mode := flag.String("mode", "default", "default | all-on | standalone | upgrade")
	keptToken := flag.String("kept-token", "", "--mode upgrade: the token of the first install")
	release := flag.String("release", "nccl-triage", "the release name helm installed")
	extract := flag.String("extract-config", "", "write the rendered config.yaml here")
	subset := flag.String("config-subset", "", "a config file whose every value must be in --config-dump")
	dump := flag.String("config-dump", "", "the output of nccl-triage check --dump-config")
	readme := flag.String("readme-values", "", "chart README whose tables must document every value")
	rbacCode := flag.String("rbac-code", "", "C++ sources whose Kubernetes client calls the agent's RBAC must match")
	printUsed := flag.Bool("print-used", false, "with --rbac-code: print the permissions the sources use, one a line")
	hooks := flag.String("hooks", "", "the release's hooks (helm get hooks): the uninstall cleanup hook is checked")
	flag.Parse()
	c := &checker{}
	var err error
	if *rbacCode != "" && *printUsed {
		var used []string
		if used, err = usedPermissions(*rbacCode); err == nil {
			fmt.Println(strings.Join(used, "\n"))
			return
		}
	} else if *rbacCode != "" {
		err = runRbacCode(c, *manifests, *rbacCode)
	} else if *readme != "" {
		err = runReadmeValues(c, *readme, *chartDir)
	} else if *subset != "" {
		err = runConfigSubset(c, *subset, *dump)
	} else {
		err = runManifests(c, *manifests, *valuesFile, *chartDir, *mode, *release, *keptToken, *extract)
		if err == nil && *hooks != "" {
			err = runHooks(c, *hooks, *valuesFile, *mode)
		}
	}
	if err != nil {
		fmt.Printf("chartcheck: %v\n", err)
		c.failed++
	}
	fmt.Printf("%d passed, %d failed\n", c.passed, c.failed)
	if c.failed > 0 {
		os.Exit(1)
	}
}

func runManifests(c *checker, manifests, valuesFile, chartDir, mode, release, keptToken, extract string) error {
	objs, err := loadManifests(manifests)
	if err != nil {
		return err
	}
	vb, err := os.ReadFile(valuesFile)
	if err != nil {
		return err
	}
	var values obj
	if err := json.Unmarshal(vb, &values); err != nil {
		return err
	}
	s := set{objs}
	if mode == "standalone" {
		return runStandalone(c, s)
	}
	allOn := mode == "all-on"
	full := "nccl-triage"
	if allOn {
		full = "triage"
	}
	ns := "nccl-triage"

	c.scope = "inventory"
	want := []string{
		"ClusterRole/" + full + "-agent", "ClusterRoleBinding/" + full + "-agent",
		"ConfigMap/" + full + "-config", "ConfigMap/" + full + "-dashboard",
		"DaemonSet/" + full + "-agent", "Deployment/" + full + "-coordinator",
		"Secret/" + full + "-token", "Service/" + full + "-coordinator",
	}
	if allOn {
		want = append(want, "AlertmanagerConfig/"+full,
			"ConfigMap/"+release+"-extra", "ConfigMap/triage-extra-string",
			"NetworkPolicy/"+full+"-coordinator",
			"PodMonitor/"+full+"-agent", "PodMonitor/"+full+"-coordinator",
			"PrometheusRule/"+full, "Service/"+full+"-agent",
			"ServiceAccount/triage-agent-sa", "ServiceAccount/triage-coordinator-sa",
			"ServiceMonitor/"+full+"-agent", "ServiceMonitor/"+full+"-coordinator",
			"ValidatingAdmissionPolicy/"+full+"-agent-own-node",
			"ValidatingAdmissionPolicyBinding/"+full+"-agent-own-node")
	} else {
		want = append(want, "ServiceAccount/"+full+"-agent", "ServiceAccount/"+full+"-coordinator")
		// chartcheck asserts on installs into the tests' API server, which serves
		// admissionregistration.k8s.io/v1: "auto" (the default) creates the policy there.
		if p := get(values, "rbac.admissionPolicy.enabled"); p == "auto" || p == true {
			want = append(want, "ValidatingAdmissionPolicy/"+full+"-agent-own-node",
				"ValidatingAdmissionPolicyBinding/"+full+"-agent-own-node")
		}
	}
	// With node identities checked (the default) the coordinator gets its own RBAC: a ClusterRole
	// for tokenreviews (cluster-scoped) and a Role for the pods of its namespace.
	// Remediation (config.remediation.mode) gives it the ClusterRole too, for nodes and events.
	verifyIdentity, _ := get(values, "config.coordinator.verify_node_identity").(bool)
	// server.auth kubernetes (the default): both review the tokens of /metrics and /status, and a
	// metrics-reader ClusterRole says who may read them (bound to rbac.metricsReaders, if any).
	httpAuth := get(values, "config.server.auth") == "kubernetes"
	remediation, _ := get(values, "config.remediation.mode").(string)
	if remediation == "" {
		remediation = "off"
	}
	if verifyIdentity || httpAuth || remediation != "off" {
		want = append(want, "ClusterRole/"+full+"-coordinator", "ClusterRoleBinding/"+full+"-coordinator")
	}
	if verifyIdentity {
		want = append(want, "Role/"+full+"-coordinator", "RoleBinding/"+full+"-coordinator")
	}
	if remediation != "off" { // the state ConfigMap's Role (coordinator/state_store.h)
		want = append(want, "Role/"+full+"-coordinator-state", "RoleBinding/"+full+"-coordinator-state")
	}
	// Leader election: a Role of its own for the coordinators' Lease.
	leaderElection, _ := get(values, "config.coordinator.leader_election").(bool)
	if leaderElection {
		want = append(want, "Role/"+full+"-coordinator-lease", "RoleBinding/"+full+"-coordinator-lease")
		// The leader label's admission policy, beside the agent's (same "auto" as above).
		if p := get(values, "rbac.admissionPolicy.enabled"); p == "auto" || p == true {
			want = append(want, "ValidatingAdmissionPolicy/"+full+"-coordinator-leader-label",
				"ValidatingAdmissionPolicyBinding/"+full+"-coordinator-leader-label")
		}
	}
	// The coordinator's PodDisruptionBudget: "auto" (the default) with more than one replica.
	replicaCount := 1
	if r, ok := get(values, "coordinator.replicas").(float64); ok {
		replicaCount = int(r)
	}
	if pdb := get(values, "coordinator.podDisruptionBudget.enabled"); pdb == true || (pdb == "auto" && replicaCount > 1) {
		want = append(want, "PodDisruptionBudget/"+full+"-coordinator")
	}
	if httpAuth {
		want = append(want, "ClusterRole/"+full+"-metrics-reader")
		if len(list(values, "rbac.metricsReaders")) > 0 {
			want = append(want, "ClusterRoleBinding/"+full+"-metrics-reader")
		}
	}
	// The scraper (monitoring.scraper.create, or a PodMonitor without a Secret of its own): a
	// ServiceAccount, its token Secret and a binding to the metrics reader.
	scraperCreate, _ := get(values, "monitoring.scraper.create").(bool)
	podMonitorOn, _ := get(values, "monitoring.podMonitor.enabled").(bool)
	rbacCreate, _ := get(values, "rbac.create").(bool)
	scraper := full + "-scraper"
	wantScraper := httpAuth && rbacCreate &&
		(scraperCreate || (podMonitorOn && str(values, "monitoring.podMonitor.tokenSecret.name") == ""))
	if wantScraper {
		want = append(want, "ServiceAccount/"+scraper, "Secret/"+scraper+"-token", "ClusterRoleBinding/"+scraper)
	}
	sort.Strings(want)
	c.check(reflect.DeepEqual(s.inventory(), want), "objects\n got  %v\n want %v", s.inventory(), want)
	if wantScraper {
		b := s.find("ClusterRoleBinding", scraper)
		c.check(str(b, "roleRef.name") == full+"-metrics-reader" && len(list(b, "subjects")) == 1 &&
			str(b, "subjects.0.name") == scraper && str(b, "subjects.0.namespace") == ns,
			"scraper binding %v -> %v", get(b, "subjects"), get(b, "roleRef"))
		sec := s.find("Secret", scraper+"-token")
		ann, _ := get(sec, "metadata.annotations").(obj)
		c.check(str(sec, "type") == "kubernetes.io/service-account-token" &&
			ann["kubernetes.io/service-account.name"] == scraper,
			"scraper token Secret type %q annotations %v", str(sec, "type"), ann)
	}
	for _, o := range objs {
		kind, _ := o["kind"].(string)
		if kind != "ClusterRole" && kind != "ClusterRoleBinding" &&
			!strings.HasPrefix(kind, "ValidatingAdmissionPolicy") {
			c.check(str(o, "metadata.namespace") != "", "%s/%s has no namespace", kind, str(o, "metadata.name"))
		}
	}

	config, _ := values["config"].(obj)
	agentListen := str(config, "agent.listen")
	grpcListen := str(config, "coordinator.listen")
	httpListen := str(config, "coordinator.http_listen")

	// ---------------------------------------------------------------- config, verbatim
	c.scope = "config"
	cm := s.find("ConfigMap", full+"-config")
	cmData, _ := get(cm, "data").(obj)
	rendered, _ := cmData["config.yaml"].(string)
	var parsed interface{}
	c.check(yaml.Unmarshal([]byte(rendered), &parsed) == nil, "config.yaml is not YAML")
	// .Values.config, but for validation.node_selector: left empty, it is agent.nodeSelector (the
	// nodes an agent runs on are the nodes validated).
	expected := normalize(config)
	if v, ok := get(expected, "validation").(map[string]interface{}); ok {
		if sel, _ := v["node_selector"].(map[string]interface{}); len(sel) == 0 {
			v["node_selector"] = map[string]interface{}{}
			if ns, ok := normalize(get(values, "agent.nodeSelector")).(map[string]interface{}); ok {
				v["node_selector"] = ns
			}
		}
	}
	c.check(reflect.DeepEqual(normalize(parsed), expected),
		"config.yaml differs from .Values.config (validation.node_selector: agent.nodeSelector when empty)\n rendered %s\n expected %s",
		toJSON(parsed), toJSON(expected))
	for _, section := range []string{"expect", "checks", "probe", "agent", "coordinator"} {
		c.check(get(parsed, section) != nil, "config.yaml lacks section %s", section)
	}
	if extract != "" {
		if err := os.WriteFile(extract, []byte(rendered), 0o644); err != nil {
			return err
		}
	}

	// ---------------------------------------------------------------- agent DaemonSet
	c.scope = "agent"
	ds := s.find("DaemonSet", full+"-agent")
	if ds == nil {
		return fmt.Errorf("no agent DaemonSet")
	}
	podSpec := get(ds, "spec.template.spec")
	c.check(get(podSpec, "hostNetwork") == true, "hostNetwork is not true")
	c.check(get(podSpec, "hostPID") == true, "hostPID is not true")
	c.check(str(podSpec, "dnsPolicy") == "ClusterFirstWithHostNet", "dnsPolicy %q", str(podSpec, "dnsPolicy"))
	agent := container(ds, "agent")
	if agent == nil {
		return fmt.Errorf("no agent container")
	}
	c.check(get(agent, "securityContext.privileged") == true, "agent container is not privileged")
	c.check(str(agent, "livenessProbe.httpGet.path") == "/livez", "liveness path %q", str(agent, "livenessProbe.httpGet.path"))
	c.check(str(agent, "readinessProbe.httpGet.path") == "/readyz", "readiness path %q", str(agent, "readinessProbe.httpGet.path"))
	c.check(str(agent, "livenessProbe.httpGet.port") == "http" && str(agent, "readinessProbe.httpGet.port") == "http",
		"probes not on the http port")
	c.check(port(agent, "http") == listenPort(agentListen), "http port %v, config.agent.listen %s", port(agent, "http"), agentListen)
	for env, field := range map[string]string{"NODE_NAME": "spec.nodeName", "POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"} {
		c.check(envFieldRef(agent, env) == field, "env %s is %q, want fieldRef %s", env, envFieldRef(agent, env), field)
	}
	args := strs(list(agent, "args"))
	c.check(len(args) >= 3 && args[0] == "agent" && args[1] == "--config" && args[2] == "/etc/nccl-triage/config.yaml",
		"agent args %v", args)
	svcHost := fmt.Sprintf("%s-coordinator.%s.svc.%s:%v", full, ns, values["clusterDomain"], listenPort(grpcListen))
	c.check(contains(args, "--coordinator") && contains(args, svcHost), "agent args %v lack --coordinator %s", args, svcHost)
	c.check(!contains(args, "--standalone"), "agent runs standalone although the coordinator is enabled")
	for _, m := range []struct {
		path, hostPath string
		readOnly       bool
	}{{"/dev", "/dev", false}, {"/sys", "/sys", true}, {"/var/lib/kubelet/pod-resources", "/var/lib/kubelet/pod-resources", true}} {
		vm := mount(agent, m.path)
		c.check(vm != nil, "no mount at %s", m.path)
		if vm == nil {
			continue
		}
		c.check((vm["readOnly"] == true) == m.readOnly, "mount %s readOnly=%v", m.path, vm["readOnly"])
		v := volume(ds, str(vm, "name"))
		c.check(str(v, "hostPath.path") == m.hostPath, "mount %s is not hostPath %s", m.path, m.hostPath)
	}
	c.check(!strings.HasPrefix(str(agent, "terminationMessagePath"), "/dev") && str(agent, "terminationMessagePath") != "",
		"terminationMessagePath %q would create a file in the host's /dev", str(agent, "terminationMessagePath"))
	cfgMount := mount(agent, "/etc/nccl-triage")
	c.check(cfgMount != nil && str(volume(ds, str(cfgMount, "name")), "configMap.name") == full+"-config",
		"config ConfigMap not mounted at /etc/nccl-triage")
	tokenDir := path.Dir(str(config, "agent.token_file"))
	tm := mount(agent, tokenDir)
	c.check(tm != nil && str(volume(ds, str(tm, "name")), "secret.secretName") == full+"-token",
		"token Secret not mounted at %s (dir of config.agent.token_file)", tokenDir)
	sel, _ := get(ds, "spec.selector.matchLabels").(obj)
	podLabels, _ := get(ds, "spec.template.metadata.labels").(obj)
	for k, v := range sel {
		c.check(podLabels[k] == v, "selector label %s=%v not on the pod template", k, v)
	}
	c.check(str(podSpec, "serviceAccountName") != "", "no service account")
	podAnnotations, _ := get(ds, "spec.template.metadata.annotations").(obj)
	c.check(podAnnotations["checksum/config"] != nil, "no config checksum annotation")
	if allOn {
		c.check(reflect.DeepEqual(normalize(get(podSpec, "nodeSelector")), normalize(map[string]string{"node-role.example/gpu": "true"})),
			"nodeSelector %v", get(podSpec, "nodeSelector"))
		c.check(len(list(podSpec, "tolerations")) == 2, "tolerations %v", list(podSpec, "tolerations"))
		c.check(str(podSpec, "runtimeClassName") == "nvidia", "runtimeClassName %q", str(podSpec, "runtimeClassName"))
		c.check(str(podSpec, "priorityClassName") == "system-node-critical", "priorityClassName %q", str(podSpec, "priorityClassName"))
		c.check(contains(args, "--once"), "extraArgs not passed: %v", args)
		c.check(strings.Contains(strings.Join(args, " "), "--log-format json"), "agent args %v lack --log-format json", args)
		c.check(mount(agent, "/etc/nccl-triage-tls") != nil, "extraVolumeMounts not mounted")
		c.check(str(agent, "image") == "registry.example/nccl-triage:1.2.3", "image %q", str(agent, "image"))
		c.check(str(podSpec, "serviceAccountName") == "triage-agent-sa", "service account %q", str(podSpec, "serviceAccountName"))
		c.check(str(podSpec, "imagePullSecrets.0.name") == "registry-credentials", "imagePullSecrets")
	} else {
		nodeSelector, _ := get(podSpec, "nodeSelector").(obj)
		c.check(len(nodeSelector) == 1 && nodeSelector["nvidia.com/gpu.present"] == "true",
			"default nodeSelector %v", nodeSelector)
		// A node agent tolerates every taint: it must stay on quarantined and NoExecute nodes.
		tol := list(podSpec, "tolerations")
		c.check(len(tol) == 1 && str(tol[0], "operator") == "Exists" && str(tol[0], "key") == "" &&
			str(tol[0], "effect") == "", "default tolerations %v, want one {operator: Exists}", tol)
		c.check(str(podSpec, "priorityClassName") == "system-node-critical", "default priorityClassName %q",
			str(podSpec, "priorityClassName"))
		c.check(str(ds, "spec.updateStrategy.type") == "RollingUpdate" &&
			fmt.Sprint(get(ds, "spec.updateStrategy.rollingUpdate.maxUnavailable")) == "10%",
			"default update strategy %v, want RollingUpdate with maxUnavailable 10%%", get(ds, "spec.updateStrategy"))
		tag := str(values, "image.tag") // set by an upgrade; empty: the chart's appVersion
		if tag == "" {
			tag = chartAppVersion(chartDir)
		}
		c.check(str(agent, "image") == "nccl-triage:"+tag, "image %q, want tag %q", str(agent, "image"), tag)
	}

	// ---------------------------------------------------------------- coordinator
	c.scope = "coordinator"
	dep := s.find("Deployment", full+"-coordinator")
	if dep == nil {
		return fmt.Errorf("no coordinator Deployment")
	}
	replicas := "1"
	if r := get(values, "coordinator.replicas"); r != nil {
		replicas = fmt.Sprint(r)
	}
	c.check(fmt.Sprint(get(dep, "spec.replicas")) == replicas, "replicas %v, want %s", get(dep, "spec.replicas"), replicas)
	if replicas == "1" {
		c.check(str(dep, "spec.strategy.type") == "Recreate", "strategy %q", str(dep, "spec.strategy.type"))
	} else {
		// Every live replica is ready (the Service selects the leader's label): a plain rolling
		// update that keeps every replica ready, one new pod before each old one goes.
		c.check(leaderElection, "%s replicas without leader election", replicas)
		c.check(str(dep, "spec.strategy.type") == "RollingUpdate" &&
			fmt.Sprint(get(dep, "spec.strategy.rollingUpdate.maxUnavailable")) == "0" &&
			fmt.Sprint(get(dep, "spec.strategy.rollingUpdate.maxSurge")) == "1",
			"strategy %v", get(dep, "spec.strategy"))
		lease := s.find("Role", full+"-coordinator-lease")
		c.check(toJSON(get(lease, "rules.1.resourceNames")) == `["nccl-triage-coordinator"]` &&
			toJSON(get(lease, "rules.1.verbs")) == `["get","update"]` &&
			toJSON(get(lease, "rules.0.verbs")) == `["create"]` && get(lease, "rules.0.resourceNames") == nil &&
			toJSON(get(lease, "rules.2.resources")) == `["pods"]` &&
			toJSON(get(lease, "rules.2.verbs")) == `["list","patch"]` && get(lease, "rules.2.resourceNames") == nil,
			"lease role %v", get(lease, "rules"))
		// A budget that counts the standby: one replica evicted at a time; a replica that is not
		// ready never holds a drain up.
		pdb := s.find("PodDisruptionBudget", full+"-coordinator")
		c.check(fmt.Sprint(get(pdb, "spec.maxUnavailable")) == "1" && get(pdb, "spec.minAvailable") == nil &&
			str(pdb, "spec.unhealthyPodEvictionPolicy") == "AlwaysAllow",
			"coordinator budget %v", get(pdb, "spec"))
		psel, _ := get(pdb, "spec.selector.matchLabels").(obj)
		dsel, _ := get(dep, "spec.selector.matchLabels").(obj)
		c.check(len(psel) > 0 && reflect.DeepEqual(psel, dsel), "budget selector %v, Deployment's %v", psel, dsel)
	}
	// The leader label: the replicas know their release's coordinator pods (the Deployment's
	// selector) with leader election, and only then.
	podSelector := ""
	for _, e := range list(container(dep, "coordinator"), "env") {
		if str(e, "name") == "NCCL_TRIAGE_COORDINATOR_POD_SELECTOR" {
			podSelector = str(e, "value")
		}
	}
	if leaderElection {
		dsel, _ := get(dep, "spec.selector.matchLabels").(obj)
		var terms []string
		for k, v := range dsel {
			terms = append(terms, fmt.Sprintf("%s=%v", k, v))
		}
		sort.Strings(terms)
		c.check(podSelector == strings.Join(terms, ","), "coordinator pod selector %q, want %q", podSelector,
			strings.Join(terms, ","))
	} else {
		c.check(podSelector == "", "coordinator pod selector %q without leader election", podSelector)
	}
	co := container(dep, "coordinator")
	c.check(get(dep, "spec.template.spec.securityContext.runAsNonRoot") == true, "coordinator may run as root")
	c.check(get(co, "securityContext.privileged") == nil || get(co, "securityContext.privileged") == false, "coordinator is privileged")
	c.check(get(co, "securityContext.allowPrivilegeEscalation") == false, "coordinator allows privilege escalation")
	c.check(get(dep, "spec.template.spec.hostNetwork") == nil, "coordinator uses the host network")
	c.check(port(co, "grpc") == listenPort(grpcListen), "grpc port %v vs %s", port(co, "grpc"), grpcListen)
	c.check(port(co, "http") == listenPort(httpListen), "http port %v vs %s", port(co, "http"), httpListen)
	c.check(str(co, "livenessProbe.httpGet.path") == "/livez" && str(co, "readinessProbe.httpGet.path") == "/readyz",
		"coordinator probes")
	cargs := strs(list(co, "args"))
	wantFormat := "--log-format text"
	if allOn {
		wantFormat = "--log-format json"
	}
	c.check(strings.Contains(strings.Join(cargs, " "), wantFormat), "coordinator args %v lack %s", cargs, wantFormat)
	c.check(len(cargs) >= 3 && cargs[0] == "coordinator" && cargs[2] == "/etc/nccl-triage/config.yaml", "coordinator args %v", cargs)
	ctm := mount(co, tokenDir)
	c.check(ctm != nil && str(volume(dep, str(ctm, "name")), "secret.secretName") == full+"-token", "coordinator token mount")
	c.check(path.Dir(str(config, "coordinator.token_file")) == tokenDir, "coordinator token_file outside the token mount")
	// The coordinator calls the API server to check the agents' identity tokens, with server.auth
	// kubernetes the tokens of /metrics and /status, and with remediation on to read and taint nodes.
	verify, _ := get(config, "coordinator.verify_node_identity").(bool)
	remediating := remediationMode(config) != "off"
	usesAPI := verify || get(config, "server.auth") == "kubernetes" || remediating
	c.check(get(dep, "spec.template.spec.automountServiceAccountToken") == usesAPI,
		"coordinator API token mounted: %v, node identities checked: %v, server.auth %v, remediation: %v",
		get(dep, "spec.template.spec.automountServiceAccountToken"), verify, get(config, "server.auth"), remediating)
	if verify {
		account := ""
		for _, e := range list(co, "env") {
			if str(e, "name") == "NCCL_TRIAGE_AGENT_SERVICE_ACCOUNT" {
				account = str(e, "value")
			}
		}
		c.check(account == ns+":"+str(podSpec, "serviceAccountName") || str(config, "coordinator.agent_service_account") != "",
			"the coordinator does not know the agents' service account (%q)", account)
		// The agent's projected identity token, where config.agent.identity_token_file says.
		identityFile := str(config, "agent.identity_token_file")
		im := mount(agent, path.Dir(identityFile))
		src := list(volume(ds, str(im, "name")), "projected.sources")
		c.check(im != nil && len(src) == 1 && str(src[0], "serviceAccountToken.audience") == "nccl-triage" &&
			str(src[0], "serviceAccountToken.path") == path.Base(identityFile),
			"agent identity token: mount %v, sources %v", im, src)
	}
	svc := s.find("Service", full+"-coordinator")
	ports := map[string]string{}
	for _, p := range list(svc, "spec.ports") {
		ports[str(p, "name")] = fmt.Sprintf("%v->%v", normalize(get(p, "port")), str(p, "targetPort"))
	}
	c.check(ports["grpc"] == fmt.Sprintf("%v->grpc", listenPort(grpcListen)) && ports["http"] == fmt.Sprintf("%v->http", listenPort(httpListen)),
		"service ports %v", ports)
	csel, _ := get(svc, "spec.selector").(obj)
	cpl, _ := get(dep, "spec.template.metadata.labels").(obj)
	for k, v := range csel {
		c.check(cpl[k] == v || k == "nccl-triage.io/coordinator-role",
			"service selector %s=%v does not match the coordinator pod", k, v)
	}
	c.check(len(csel) > 0 && csel["app.kubernetes.io/component"] == "coordinator", "service selector %v", csel)
	// Several replicas: the Service selects the leader label too (not on the pod template: the
	// leader puts it on its own pod); one replica: readiness alone, the label not required.
	if replicas == "1" {
		c.check(csel["nccl-triage.io/coordinator-role"] == nil, "service selector %v requires the leader label of a single replica", csel)
	} else {
		dsel, _ := get(dep, "spec.selector.matchLabels").(obj)
		rest := obj{}
		for k, v := range csel {
			if k != "nccl-triage.io/coordinator-role" {
				rest[k] = v
			}
		}
		c.check(csel["nccl-triage.io/coordinator-role"] == "leader" && reflect.DeepEqual(rest, dsel),
			"service selector %v, want the Deployment's %v and nccl-triage.io/coordinator-role=leader", csel, dsel)
	}

	// ---------------------------------------------------------------- RBAC: exactly the verbs used
	c.scope = "rbac"
	// pods always; nodes get with workloads (on by default), nodes/status and events when enabled;
	// pods/log and events with rbac.triage (nccl-triage triage in an agent pod).
	wantAgent := []string{"/nodes:get", "/pods:list", "/pods:patch"}
	if allOn {
		wantAgent = append(wantAgent, "/events:create", "/nodes/status:patch", "/pods/log:get")
	}
	reviews := []string{"authentication.k8s.io/tokenreviews:create", "authorization.k8s.io/subjectaccessreviews:create"}
	if httpAuth {
		wantAgent = append(wantAgent, reviews...)
	}
	sort.Strings(wantAgent)
	ar := s.find("ClusterRole", full+"-agent")
	c.check(reflect.DeepEqual(rbacRules(ar), wantAgent), "agent rules %v, want %v", rbacRules(ar), wantAgent)
	// The coordinator: tokenreviews create (identity tokens, and with server.auth the tokens of
	// /metrics and /status, with subjectaccessreviews create), pods get in its own namespace only
	// when it checks the agents' identity tokens; nodes get/list/watch and events create with remediation
	// (dry-run included), nodes patch only when it taints or cordons; nothing else.
	clusterRoles, roles := 1, 0
	wantCoordinator := []string{}
	if verifyIdentity || httpAuth {
		wantCoordinator = append(wantCoordinator, reviews[0])
	}
	if httpAuth {
		wantCoordinator = append(wantCoordinator, reviews[1])
	}
	if remediation != "off" {
		wantCoordinator = append(wantCoordinator, "/events:create", "/nodes:get", "/nodes:list",
			"/nodes:watch")
	}
	if remediation == "taint" || remediation == "cordon" {
		wantCoordinator = append(wantCoordinator, "/nodes:patch")
	}
	sort.Strings(wantCoordinator)
	if len(wantCoordinator) > 0 {
		cr := s.find("ClusterRole", full+"-coordinator")
		c.check(reflect.DeepEqual(rbacRules(cr), wantCoordinator),
			"coordinator cluster rules %v, want %v", rbacRules(cr), wantCoordinator)
		clusterRoles++
	}
	if remediation != "off" {
		// The state ConfigMap (coordinator/state_store.h): create, and get/update of its name only.
		r := s.find("Role", full+"-coordinator-state")
		c.check(reflect.DeepEqual(rbacRules(r), []string{"/configmaps:create", "/configmaps:get", "/configmaps:update"}) &&
			str(r, "metadata.namespace") == ns,
			"coordinator state rules %v in %q", rbacRules(r), str(r, "metadata.namespace"))
		for _, rule := range list(r, "rules") {
			names := strs(list(rule, "resourceNames"))
			if strings.Contains(toJSON(get(rule, "verbs")), "create") {
				c.check(len(names) == 0, "configmaps create with resourceNames %v never matches", names)
			} else {
				c.check(reflect.DeepEqual(names, []string{full + "-state"}), "configmaps get/update on %v, want [%s-state]", names, full)
			}
		}
		roles++
	}
	if verifyIdentity {
		r := s.find("Role", full+"-coordinator")
		c.check(reflect.DeepEqual(rbacRules(r), []string{"/pods:get"}) && str(r, "metadata.namespace") == ns,
			"coordinator namespace rules %v in %q", rbacRules(r), str(r, "metadata.namespace"))
		roles++
	}
	if leaderElection {
		r := s.find("Role", full+"-coordinator-lease")
		c.check(reflect.DeepEqual(rbacRules(r), []string{"/pods:list", "/pods:patch", "coordination.k8s.io/leases:create",
			"coordination.k8s.io/leases:get", "coordination.k8s.io/leases:update"}) &&
			str(r, "metadata.namespace") == ns,
			"coordinator lease rules %v in %q", rbacRules(r), str(r, "metadata.namespace"))
		roles++
	}
	if httpAuth {
		mr := s.find("ClusterRole", full+"-metrics-reader")
		c.check(reflect.DeepEqual(rbacRules(mr), []string{"nonResource:/metrics:get", "nonResource:/status:get"}),
			"metrics-reader rules %v", rbacRules(mr))
		clusterRoles++
		if readers := list(values, "rbac.metricsReaders"); len(readers) > 0 {
			b := s.find("ClusterRoleBinding", full+"-metrics-reader")
			c.check(toJSON(list(b, "subjects")) != "null" && len(list(b, "subjects")) == len(readers),
				"metrics-reader binding subjects %v, want %v", get(b, "subjects"), readers)
			for i, sub := range list(b, "subjects") {
				c.check(str(sub, "name") == str(readers[i], "name") && str(sub, "kind") == str(readers[i], "kind"),
					"metrics-reader subject %d: %v, want %v", i, sub, readers[i])
			}
		}
	}
	c.check(len(s.byKind("ClusterRole")) == clusterRoles && len(s.byKind("Role")) == roles,
		"%d ClusterRoles and %d Roles, want %d and %d: RBAC beyond the agent's, the coordinator's and the metrics reader's",
		len(s.byKind("ClusterRole")), len(s.byKind("Role")), clusterRoles, roles)
	coordinatorSA := str(dep, "spec.template.spec.serviceAccountName")
	for _, kinds := range [][2]string{{"ClusterRoleBinding", "ClusterRole"}, {"RoleBinding", "Role"}} {
		for _, b := range s.byKind(kinds[0]) {
			role := str(b, "roleRef.name")
			c.check(str(b, "roleRef.kind") == kinds[1] && s.find(kinds[1], role) != nil,
				"binding %s refers to missing %s %s", str(b, "metadata.name"), kinds[1], role)
			if strings.HasSuffix(role, "-metrics-reader") {
				continue // the operator's scrapers (rbac.metricsReaders), checked above
			}
			for _, sub := range list(b, "subjects") {
				c.check(s.find("ServiceAccount", str(sub, "name")) != nil && str(sub, "namespace") == ns,
					"binding %s subject %s/%s missing", str(b, "metadata.name"), str(sub, "namespace"), str(sub, "name"))
				if strings.HasSuffix(role, "-coordinator") || strings.HasSuffix(role, "-coordinator-state") {
					c.check(str(sub, "name") == coordinatorSA, "binding %s grants the coordinator's rules to %s",
						str(b, "metadata.name"), str(sub, "name"))
				}
			}
		}
	}
	for _, r := range s.byKind("ClusterRole") {
		for _, rule := range rbacRules(r) {
			c.check(!strings.Contains(rule, "*"), "wildcard rule %s in %s", rule, str(r, "metadata.name"))
		}
	}
	c.check(str(podSpec, "serviceAccountName") != str(dep, "spec.template.spec.serviceAccountName"),
		"agent and coordinator share a service account")

	// ---------------------------------------------------------------- token Secret
	c.scope = "token"
	sec := s.find("Secret", full+"-token")
	tok, err := base64.StdEncoding.DecodeString(str(sec, "data.token"))
	c.check(err == nil && len(tok) > 0, "token is not base64 or empty")
	switch mode {
	case "all-on":
		c.check(string(tok) == "fixed-token-for-tests", "token.value not used")
	case "upgrade":
		c.check(keptToken != "" && string(tok) == keptToken, "the token of the earlier install was not kept: %q", tok)
	default:
		c.check(len(tok) == 48, "generated token has %d characters, want 48", len(tok))
	}
	// The pods roll when the token changes: both carry the same checksum of the Secret's token.
	wantSum := fmt.Sprintf("%x", sha256.Sum256([]byte(release+"/"+string(tok))))
	for _, o := range []obj{ds, dep} {
		c.check(str(o, "spec.template.metadata.annotations.checksum/token") == wantSum,
			"%s/%s: checksum/token %q, want the checksum of the Secret's token", o["kind"],
			str(o, "metadata.name"), str(o, "spec.template.metadata.annotations.checksum/token"))
	}

	// ---------------------------------------------------------------- dashboard (one source)
	c.scope = "dashboard"
	dash := s.find("ConfigMap", full+"-dashboard")
	c.check(str(dash, "metadata.labels.grafana_dashboard") == "1", "dashboard ConfigMap lacks grafana_dashboard: \"1\"")
	file, err := os.ReadFile(filepath.Join(chartDir, "files", "nccl-triage-dashboard.json"))
	if err != nil {
		return err
	}
	data, _ := get(dash, "data").(obj)
	// The file's links are relative (docs/alerts.md#..., docs/checks.md#...); the chart puts
	// runbookBaseUrl in place of docs/alerts.md, and its directory before the other pages when it
	// ends in alerts.md.
	runbook := str(values, "runbookBaseUrl")
	docsDir := "docs/"
	if strings.HasSuffix(runbook, "alerts.md") {
		docsDir = strings.TrimSuffix(runbook, "alerts.md")
	}
	wantDash := strings.ReplaceAll(string(file), `"url": "docs/alerts.md`, `"url": "`+runbook)
	wantDash = strings.ReplaceAll(wantDash, `"url": "docs/`, `"url": "`+docsDir)
	c.check(data["nccl-triage-dashboard.json"] == wantDash, "dashboard ConfigMap differs from files/nccl-triage-dashboard.json with runbookBaseUrl")
	if allOn {
		c.check(str(dash, "metadata.namespace") == "monitoring", "dashboard namespace %q", str(dash, "metadata.namespace"))
	}

	if !allOn {
		return nil
	}
	// ---------------------------------------------------------------- monitoring (all-on)
	c.scope = "monitoring"
	for _, kind := range []string{"PodMonitor", "ServiceMonitor"} {
		for _, comp := range []string{"agent", "coordinator"} {
			m := s.find(kind, full+"-"+comp)
			field := "spec.podMetricsEndpoints"
			if kind == "ServiceMonitor" {
				field = "spec.endpoints"
			}
			ep := get(m, field+".0")
			c.check(str(ep, "port") == "http" && str(ep, "path") == "/metrics", "%s %s endpoint %v", kind, comp, ep)
			c.check(get(ep, "honorLabels") == true, "%s %s does not honour labels", kind, comp)
			relabel := toJSON(get(ep, "relabelings"))
			c.check(strings.HasSuffix(relabel, `{"sourceLabels":["__meta_kubernetes_pod_label_team"],"targetLabel":"team"}]`),
				"%s %s: extra relabelings not appended after the chart's: %s", kind, comp, relabel)
			c.check(toJSON(get(ep, "metricRelabelings")) == `[{"action":"drop","regex":"nccl_triage_ib_port_errors_total","sourceLabels":["__name__"]}]`,
				"%s %s metricRelabelings %s", kind, comp, toJSON(get(ep, "metricRelabelings")))
			c.check(fmt.Sprint(get(m, "spec.sampleLimit")) == "5000", "%s %s sampleLimit %v", kind, comp, get(m, "spec.sampleLimit"))
			c.check(strings.Contains(relabel, `"replacement":"nccl-triage-`+comp+`"`), "%s %s does not set job: %s", kind, comp, relabel)
			c.check(strings.Contains(relabel, "__meta_kubernetes_pod_node_name") == (comp == "agent"), "%s %s node relabel: %s", kind, comp, relabel)
			c.check(str(m, "metadata.labels.release") == "kube-prometheus-stack", "%s %s labels", kind, comp)
			msel, _ := get(m, "spec.selector.matchLabels").(obj)
			c.check(msel["app.kubernetes.io/component"] == comp, "%s %s selector %v", kind, comp, msel)
			// server.auth kubernetes: Prometheus sends a service-account token, from the file
			// (ServiceMonitor) or from the Secret (PodMonitor) the values name.
			if kind == "ServiceMonitor" {
				c.check(str(ep, "bearerTokenFile") == "/var/run/secrets/prometheus/token",
					"%s %s bearerTokenFile %q", kind, comp, str(ep, "bearerTokenFile"))
			} else {
				c.check(str(ep, "authorization.type") == "Bearer" &&
					str(ep, "authorization.credentials.name") == "prometheus-scrape-token" &&
					str(ep, "authorization.credentials.key") == "token",
					"%s %s authorization %v", kind, comp, get(ep, "authorization"))
			}
		}
	}
	asvc := s.find("Service", full+"-agent")
	c.check(str(asvc, "spec.clusterIP") == "None", "agent Service is not headless")

	c.scope = "rules"
	checkRules(c, s.find("PrometheusRule", full), chartDir)
	checkInhibitRules(c, s.find("AlertmanagerConfig", full), chartDir)

	c.scope = "admission-policy"
	vap := s.find("ValidatingAdmissionPolicy", full+"-agent-own-node")
	c.check(str(vap, "spec.matchConditions.0.expression") ==
		`request.userInfo.username == "system:serviceaccount:nccl-triage:triage-agent-sa"`,
		"the policy does not match the agent's service account: %q", str(vap, "spec.matchConditions.0.expression"))
	vapText := toJSON(get(vap, "spec.validations"))
	c.check(strings.Contains(vapText, "object.spec.nodeName in variables.nodes") &&
		strings.Contains(toJSON(get(vap, "spec.variables")), "authentication.kubernetes.io/node-name"),
		"the policy does not compare spec.nodeName with the token's node: %s", vapText)
	c.check(strings.Contains(vapText, "startsWith('nccl-triage.io/')"), "the policy does not restrict the annotations")
	vapBinding := s.find("ValidatingAdmissionPolicyBinding", full+"-agent-own-node")
	c.check(str(vapBinding, "spec.policyName") == full+"-agent-own-node" && toJSON(get(vapBinding, "spec.validationActions")) == `["Deny"]`,
		"binding %s", toJSON(get(vapBinding, "spec")))

	c.scope = "networkpolicy"
	np := s.find("NetworkPolicy", full+"-coordinator")
	ing := list(np, "spec.ingress")
	c.check(len(ing) == 2, "ingress rules %d", len(ing))
	if len(ing) == 2 {
		c.check(str(ing[0], "ports.0.port") == "grpc" && str(ing[1], "ports.0.port") == "http", "ingress ports")
		c.check(str(ing[0], "from.0.ipBlock.cidr") == "10.0.0.0/16" && str(ing[0], "from.1.ipBlock.cidr") == "fd00::/64",
			"node CIDRs %v", get(ing[0], "from"))
		// HTTP (/metrics, /status, POST /sweep) from monitoring's Prometheus only, by default.
		nsLabels, _ := get(ing[1], "from.0.namespaceSelector.matchLabels").(obj)
		podLabels, _ := get(ing[1], "from.0.podSelector.matchLabels").(obj)
		c.check(nsLabels["kubernetes.io/metadata.name"] == "monitoring",
			"prometheus namespaceSelector %v", get(ing[1], "from.0.namespaceSelector"))
		c.check(podLabels["app.kubernetes.io/name"] == "prometheus",
			"prometheus podSelector %v", get(ing[1], "from.0.podSelector"))
		c.check(len(list(ing[1], "from")) == 1, "HTTP rule admits more than Prometheus: %v", get(ing[1], "from"))
	}
	return nil
}

// remediationMode is config.remediation.mode of a rendered config ("off" when unset).
func remediationMode(config interface{}) string {
	if m, ok := get(config, "remediation.mode").(string); ok && m != "" {
		return m
	}
	return "off"
}

// kubeCalls maps each KubeClient method (agent/kube/kube_api.h) to the permission it needs.
var kubeCalls = map[string]string{
	"PatchPodAnnotations":       "/pods:patch",
	"PatchPodAnnotationsIfUid":  "/pods:patch",
	"GetPod":                    "/pods:get",
	"ListPods":                  "/pods:list",
	"GetNode":                   "/nodes:get",
	"CreateTokenReview":         "authentication.k8s.io/tokenreviews:create",
	"CreateSubjectAccessReview": "authorization.k8s.io/subjectaccessreviews:create",
	"PatchNodeCondition":        "/nodes/status:patch",
	"CreateEvent":               "/events:create",
	"ListNamespacedPods":        "/pods:list",
	"StreamPodLog":              "/pods/log:get",
	"ListNodes":                 "/nodes:list",
	"WatchNodes":                "/nodes:watch",
	"PatchNode":                 "/nodes:patch",
	"RemoveNodeCondition":       "/nodes/status:patch",
	"ListAllPods":               "/pods:list",
	"GetConfigMap":              "/configmaps:get",
	"PutConfigMap":              "/configmaps:create,/configmaps:update",
	"GetLease":                  "coordination.k8s.io/leases:get",
	"CreateLease":               "coordination.k8s.io/leases:create",
	"UpdateLease":               "coordination.k8s.io/leases:update",
	"PatchPodLabels":            "/pods:patch",
	"DeleteObject":              "apps/daemonsets:delete,apps/deployments:delete,/configmaps:delete,coordination.k8s.io/leases:delete",
}

// runRbacCode derives the agent's permissions from the KubeClient calls in the sources and
// compares them with the agent ClusterRole of a render with every option on: RBAC is exactly
// what the code uses, no more, no less.
// usedPermissions derives the permissions ("group/resource:verb") of the KubeClient calls in the
// C++ sources (the real client and the fakes excepted); an error for a KubeClient method with no
// known permission.
func usedPermissions(sources string) ([]string, error) {
	header, err := os.ReadFile(filepath.Join(sources, "kube", "kube_api.h"))
	if err != nil {
		return nil, err
	}
	methods := regexp.MustCompile(`virtual KubeResponse (\w+)\(`).FindAllStringSubmatch(string(header), -1)
	if len(methods) == 0 {
		return nil, fmt.Errorf("no KubeClient methods found")
	}
	for _, m := range methods {
		if _, ok := kubeCalls[m[1]]; !ok {
			return nil, fmt.Errorf("KubeClient::%s has no known permission: add it to kubeCalls and the chart's RBAC", m[1])
		}
	}
	used := map[string]bool{}
	call := regexp.MustCompile(`(?:->|\.)(\w+)\(`)
	err = filepath.Walk(sources, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, ".cc") {
			return err
		}
		base := filepath.Base(p)
		if base == "kube_client.cc" || strings.HasPrefix(base, "fake_") || strings.HasSuffix(base, "_test.cc") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			if perms, ok := kubeCalls[m[1]]; ok {
				for _, perm := range strings.Split(perms, ",") {
					used[perm] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var want []string
	for p := range used {
		want = append(want, p)
	}
	sort.Strings(want)
	return want, nil
}

func runRbacCode(c *checker, manifests, sources string) error {
	c.scope = "rbac-code"
	want, err := usedPermissions(sources)
	if err != nil {
		return err
	}
	c.check(len(want) > 0, "no KubeClient calls found in %s", sources)
	// A comma list: the release's objects and its hooks (the uninstall cleanup's RBAC).
	var objs []obj
	for _, file := range strings.Split(manifests, ",") {
		more, err := loadManifests(file)
		if err != nil {
			return err
		}
		objs = append(objs, more...)
	}
	var got []string
	for _, o := range objs {
		// The metrics reader is what others may do to nccl-triage, not what its code calls.
		if (o["kind"] == "ClusterRole" || o["kind"] == "Role") && !strings.HasSuffix(str(o, "metadata.name"), "-metrics-reader") {
			got = append(got, rbacRules(o)...)
		}
	}
	// Several roles may grant one permission (both review tokens): compare the sets.
	seen := map[string]bool{}
	var unique []string
	for _, p := range got {
		if !seen[p] {
			seen[p] = true
			unique = append(unique, p)
		}
	}
	got = unique
	sort.Strings(got)
	c.check(reflect.DeepEqual(got, want), "RBAC with every option on grants %v; the code calls for %v", got, want)
	return nil
}

// runHooks checks the release's hooks: with uninstall.cleanup (the default) the pre-delete Job
// running `nccl-triage-server cleanup --stop` on the agent DaemonSet (and the coordinator
// Deployment), its ServiceAccount, and RBAC of exactly what the cleanup calls; nothing else.
func runHooks(c *checker, hooksFile, valuesFile, mode string) error {
	c.scope = "uninstall-hook"
	objs, err := loadManifests(hooksFile)
	if err != nil {
		return err
	}
	vb, err := os.ReadFile(valuesFile)
	if err != nil {
		return err
	}
	var values obj
	if err := json.Unmarshal(vb, &values); err != nil {
		return err
	}
	s := set{objs}
	full, ns := "nccl-triage", "nccl-triage"
	switch mode {
	case "all-on":
		full = "triage"
	case "standalone":
		full, ns = "standalone-nccl-triage", "standalone"
	}
	name := full + "-cleanup"
	cleanup, _ := get(values, "uninstall.cleanup").(bool)
	rbacCreate, _ := get(values, "rbac.create").(bool)
	coordinator, _ := get(values, "coordinator.enabled").(bool)
	lease := str(values, "config.coordinator.lease_name")
	if lease == "" {
		lease = "nccl-triage-coordinator"
	}
	var want []string
	if cleanup {
		want = append(want, "Job/"+name, "ServiceAccount/"+name)
		if rbacCreate {
			want = append(want, "ClusterRole/"+name, "ClusterRoleBinding/"+name, "Role/"+name, "RoleBinding/"+name)
		}
	}
	sort.Strings(want)
	got := s.inventory()
	if len(got) == 0 {
		got = nil
	}
	c.check(reflect.DeepEqual(got, want), "hooks\n got  %v\n want %v", got, want)
	if !cleanup {
		return nil
	}
	for _, o := range objs {
		ann, _ := get(o, "metadata.annotations").(obj)
		c.check(ann["helm.sh/hook"] == "pre-delete" &&
			ann["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded",
			"%s/%s hook annotations %v", o["kind"], str(o, "metadata.name"), ann)
	}
	if rbacCreate {
		cr := s.find("ClusterRole", name)
		wantCluster := []string{"/nodes/status:patch", "/nodes:get", "/nodes:list", "/nodes:patch", "/pods:list", "/pods:patch"}
		c.check(reflect.DeepEqual(rbacRules(cr), wantCluster), "cleanup cluster rules %v, want %v", rbacRules(cr), wantCluster)
		r := s.find("Role", name)
		wantNs := []string{"apps/daemonsets:delete"}
		if coordinator {
			wantNs = append(wantNs, "/configmaps:delete", "apps/deployments:delete", "coordination.k8s.io/leases:delete")
		}
		sort.Strings(wantNs)
		c.check(reflect.DeepEqual(rbacRules(r), wantNs) && str(r, "metadata.namespace") == ns,
			"cleanup namespace rules %v in %q, want %v", rbacRules(r), str(r, "metadata.namespace"), wantNs)
		byResource := map[string]string{"daemonsets": full + "-agent", "deployments": full + "-coordinator",
			"configmaps": full + "-state", "leases": lease}
		for _, rule := range list(r, "rules") {
			names := strs(list(rule, "resourceNames"))
			want := byResource[strs(list(rule, "resources"))[0]]
			c.check(reflect.DeepEqual(names, []string{want}), "cleanup deletes %v, want [%s]", names, want)
		}
		for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
			b := s.find(kind, name)
			c.check(str(b, "subjects.0.name") == name && str(b, "subjects.0.namespace") == ns && len(list(b, "subjects")) == 1,
				"%s %s subjects %v", kind, name, get(b, "subjects"))
		}
	}
	job := s.find("Job", name)
	c.check(str(job, "spec.template.spec.serviceAccountName") == name, "cleanup Job runs as %q",
		str(job, "spec.template.spec.serviceAccountName"))
	args := strings.Join(strs(list(job, "spec.template.spec.containers.0.args")), " ")
	wantArgs := "cleanup --stop " + ns + "/daemonset/" + full + "-agent"
	if coordinator {
		wantArgs += " --stop " + ns + "/deployment/" + full + "-coordinator --delete " + ns +
			"/configmap/" + full + "-state --delete " + ns + "/lease/" + lease
	}
	c.check(strings.HasPrefix(args, wantArgs+" --stop-timeout "), "cleanup Job args %q, want %q ...", args, wantArgs)
	return nil
}

// runStandalone checks a render without the coordinator: no coordinator objects, agents started
// with --standalone and no coordinator address.
func runStandalone(c *checker, s set) error {
	c.scope = "standalone"
	for _, o := range s.objs {
		c.check(!strings.Contains(str(o, "metadata.name"), "coordinator"), "%s/%s rendered without a coordinator",
			o["kind"], str(o, "metadata.name"))
	}
	dss := s.byKind("DaemonSet")
	if !c.check(len(dss) == 1, "%d DaemonSets, want the agent's", len(dss)) {
		return nil
	}
	args := strs(list(container(dss[0], "agent"), "args"))
	c.check(contains(args, "--standalone") && !contains(args, "--coordinator"), "agent args %v", args)
	return nil
}

// runConfigSubset checks that every leaf value of the rendered config is in the binary's dump of
// the effective configuration, unchanged: the loader understood every key the chart wrote.
func runConfigSubset(c *checker, subsetFile, dumpFile string) error {
	c.scope = "config-load"
	var sub, dump interface{}
	for f, dst := range map[string]*interface{}{subsetFile: &sub, dumpFile: &dump} {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := yaml.Unmarshal(b, dst); err != nil {
			return fmt.Errorf("%s: %v", f, err)
		}
	}
	// The dump is walked alongside (not looked up by the dotted path: a node label key such as
	// nvidia.com/gpu.present holds dots of its own).
	var walk func(p string, v, got interface{})
	walk = func(p string, v, got interface{}) {
		if m, ok := v.(obj); ok && len(m) > 0 {
			d, _ := got.(obj)
			for k, e := range m {
				walk(strings.TrimPrefix(p+"."+k, "."), e, d[k])
			}
			return
		}
		c.check(reflect.DeepEqual(normalize(got), normalize(v)), "%s: rendered %s, effective %s", p, toJSON(v), toJSON(got))
	}
	walk("", normalize(sub), normalize(dump))
	return nil
}

// runReadmeValues checks that the chart README's tables document every value of values.yaml (a
// row for the value or for a map above it; config keys one by one) and that every documented
// value exists in values.schema.json.
func runReadmeValues(c *checker, readme, chartDir string) error {
	c.scope = "readme"
	b, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	documented := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "| `") {
			documented[strings.Split(l[3:], "`")[0]] = true
		}
	}
	vb, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return err
	}
	var values obj
	if err := yaml.Unmarshal(vb, &values); err != nil {
		return err
	}
	var walk func(p string, v interface{})
	walk = func(p string, v interface{}) {
		if m, ok := v.(obj); ok && len(m) > 0 {
			for k, e := range m {
				walk(strings.TrimPrefix(p+"."+k, "."), e)
			}
			return
		}
		ok := false
		for q := p; q != ""; {
			if documented[q] && (!strings.HasPrefix(p, "config.") || strings.Count(q, ".") >= 2) {
				ok = true
			}
			i := strings.LastIndex(q, ".")
			if i < 0 {
				break
			}
			q = q[:i]
		}
		c.check(ok, "value %s is not documented in %s", p, filepath.Base(readme))
	}
	walk("", values)
	sb, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		return err
	}
	var schema obj
	if err := json.Unmarshal(sb, &schema); err != nil {
		return err
	}
	for d := range documented {
		s := interface{}(schema)
		for _, k := range strings.Split(d, ".") {
			s = get(s, "properties."+k)
		}
		if strings.Contains(d, ".") || d == "config" || values[d] != nil {
			c.check(s != nil, "README documents %s, which the schema does not know", d)
		}
	}
	// A pool's expect takes the keys of config.expect: the schema holds a copy (no $ref in this
	// renderer), which must not drift from the original.
	c.check(reflect.DeepEqual(get(schema, "properties.config.properties.expect"),
		get(schema, "properties.config.properties.pools.items.properties.expect")),
		"values.schema.json: config.pools[].expect is not a copy of config.expect")
	return nil
}

func chartAppVersion(chartDir string) string {
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return ""
	}
	var m obj
	if yaml.Unmarshal(b, &m) != nil {
		return ""
	}
	return fmt.Sprint(m["appVersion"])
}

func toJSON(v interface{}) string {
	b, _ := json.Marshal(normalize(v))
	return string(b)
}

// checkRules compares the PrometheusRule of the all-on values with files/nccl-triage-rules*.yaml
// changed exactly as those values say: runbook base URL, NcclTriagePairFault disabled, team label
// added to every alert, thresholds from the config (agent interval 30 s, sweep 600 s, stale after
// 4 intervals, busbw fraction 0.6, fabric-wide above 10 % and at least 5 nodes).
func checkRules(c *checker, pr obj, chartDir string) {
	thresholds := map[string][][2]string{
		"NcclTriageChecksStale":        {{"> 3 * 60", "> 4 * 30"}},
		"NcclTriageProbesStale":        {{"> 3 * 900", "> 4 * 600"}},
		"NcclTriageSweepStale":         {{"> 3 * 900", "> 4 * 600"}},
		"NcclTriageBusbwBelowExpected": {{"0.5 * nccl_triage_ib_expected", "0.6 * nccl_triage_ib_expected"}},
		"NcclTriageFabricWideCause":    {{") > 0.05\n", ") > 0.1\n"}, {") >= 3\n", ") >= 5\n"}},
	}
	var want []interface{}
	for _, f := range []string{"nccl-triage-rules.yaml", "nccl-triage-rules-ksm.yaml"} {
		b, err := os.ReadFile(filepath.Join(chartDir, "files", f))
		if !c.check(err == nil, "%v", err) {
			return
		}
		text := strings.ReplaceAll(string(b), "runbook_url: docs/alerts.md",
			"runbook_url: https://docs.example/nccl-triage/docs/alerts.md")
		var doc obj
		if !c.check(yaml.Unmarshal([]byte(text), &doc) == nil, "%s is not YAML", f) {
			return
		}
		for _, g := range doc["groups"].([]interface{}) {
			var rules []interface{}
			for _, r := range list(g, "rules") {
				rule := r.(obj)
				name := str(rule, "alert")
				if name == "NcclTriagePairFault" {
					continue
				}
				for _, t := range thresholds[name] {
					expr := str(rule, "expr")
					c.check(strings.Contains(expr, t[0]), "%s: the file's expression lacks %q", name, t[0])
					rule["expr"] = strings.Replace(expr, t[0], t[1], 1)
				}
				labels, _ := rule["labels"].(obj)
				if labels == nil {
					labels = obj{}
				}
				labels["team"] = "gpu-platform"
				rule["labels"] = labels
				rules = append(rules, rule)
			}
			want = append(want, obj{"name": str(g, "name"), "rules": rules})
		}
	}
	got := normalize(get(pr, "spec.groups"))
	c.check(reflect.DeepEqual(got, normalize(want)),
		"PrometheusRule groups differ from files/nccl-triage-rules*.yaml with the all-on values applied:\n got  %s\n want %s",
		toJSON(got), toJSON(want))
	c.check(!strings.Contains(toJSON(pr), "github.com/nccl-triage"), "runbook base URL not replaced")
	c.check(!strings.Contains(toJSON(pr), "NcclTriagePairFault\""), "disabled alert NcclTriagePairFault rendered")
}

// checkInhibitRules compares the AlertmanagerConfig's inhibitRules with
// files/alertmanager-inhibit-rules.yaml, matcher by matcher.
func checkInhibitRules(c *checker, amc obj, chartDir string) {
	b, err := os.ReadFile(filepath.Join(chartDir, "files", "alertmanager-inhibit-rules.yaml"))
	if !c.check(err == nil, "%v", err) {
		return
	}
	var doc obj
	if !c.check(yaml.Unmarshal(b, &doc) == nil, "alertmanager-inhibit-rules.yaml is not YAML") {
		return
	}
	matcher := regexp.MustCompile(`^([a-z_]+)(=~|!~|!=|=)"(.*)"$`)
	var want []interface{}
	for _, r := range list(doc, "inhibit_rules") {
		out := obj{"equal": get(r, "equal")}
		for _, side := range []string{"source", "target"} {
			var ms []interface{}
			for _, m := range strs(list(r, side+"_matchers")) {
				p := matcher.FindStringSubmatch(m)
				if !c.check(p != nil, "matcher %q", m) {
					continue
				}
				ms = append(ms, obj{"name": p[1], "matchType": p[2], "value": p[3]})
			}
			out[side+"Match"] = ms
		}
		want = append(want, out)
	}
	c.check(len(want) >= 4, "only %d inhibit rules", len(want))
	c.check(reflect.DeepEqual(normalize(get(amc, "spec.inhibitRules")), normalize(want)),
		"AlertmanagerConfig inhibitRules differ from the file:\n got  %s\n want %s",
		toJSON(get(amc, "spec.inhibitRules")), toJSON(want))
	c.check(str(amc, "metadata.labels.alertmanagerConfig") == "nccl-triage", "AlertmanagerConfig labels")
}
