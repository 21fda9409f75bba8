// crashloop-storm: container terminations with exact ground truth, for the
// `crashdoc watch` drills (tests/cluster/watch.sh).
//
// It plays the kubelet for pods that kwok started: each termination is one
// status update the way the kubelet v1.36.3 writes it once a sync falls in the
// back-off (state waiting CrashLoopBackOff, lastState.terminated = the crashed
// run with reason and exit code, restartCount and containerID still the
// crashed container's, Ready=False), at a paced rate; a pod that crashes again
// is first restarted the way the kubelet restarts it (a new container:
// state.running, a new containerID, restartCount+1, lastState kept). The
// kubelet counts a restart when it creates the next container
// (pkg/kubelet/kuberuntime/kuberuntime_container.go startContainer:
// restartCount = previous + 1), and the status' restartCount is the newest
// container's (pkg/kubelet/kubelet_pods.go convertToAPIContainerStatuses), so
// restartCount does not count terminations: the ground truth is the number of
// ended runs, read back from the API server before and after (endedRuns: runs
// 0..R of a container whose newest run R has ended, 0..R-1 of a running one).
// It reports exactly how many terminations it produced, the rate it achieved,
// and the ended-runs increase (which must equal the terminations) and the
// restartCount increase (which must equal the restarts it wrote); the tool
// exits 1 otherwise.
//
//	crashloop-storm setup -n NS --pods 5000 --nodes 10 --deployments 10
//	    kwok nodes kwok-storm-<i> (tainted, labelled crashdoc.test/storm=true),
//	    Deployments storm-<j> whose pods are pinned to those nodes; waits until
//	    every pod runs (kwok's default pod-ready stage starts them).
//	crashloop-storm run -n NS [-l SELECTOR] (--rate R --duration D | --count N [--rate R])
//	    [--out SUMMARY.json] [--log TERMINATIONS.tsv] [--terminated-first-every K]
//	    terminations on the Running pods of NS, round-robin in name order.
//	crashloop-storm count -n NS [-l SELECTOR] [--out PODS.tsv]
//	    sums of restartCount and of ended runs (and per-container rows: uid, pod,
//	    container, restartCount, ended runs).
//	crashloop-storm teardown -n NS
//	    deletes the namespace and the kwok-storm nodes.
//
// kwok does not fight these updates: its pod stages only act on Pending pods,
// Job pods and deleted pods (tests/cluster/kwok/00-defaults.yaml), and the
// storm pods carry no crashdoc.test/behavior annotation.
//
// Every status patch sets absolute values (restartCount, containerID, fixed
// finishedAt), so a patch retried after a network error cannot count twice.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "setup":
		err = cmdSetup(os.Args[2:])
	case "run":
		err = cmdRun(os.Args[2:])
	case "count":
		err = cmdCount(os.Args[2:])
	case "teardown":
		err = cmdTeardown(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "crashloop-storm %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: crashloop-storm setup|run|count|teardown [flags] (see the source header)")
	os.Exit(2)
}

type common struct {
	kubeconfig string
	namespace  string
	selector   string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig (an identity allowed to patch pods/status)")
	fs.StringVar(&c.namespace, "n", "crashdoc-storm", "namespace")
	fs.StringVar(&c.selector, "l", "", "label selector for the pods")
}

func (c *common) client() (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, err
	}
	// No client-side throttling: the pacer sets the rate.
	cfg.QPS = 10000
	cfg.Burst = 10000
	cfg.Timeout = 30 * time.Second
	cfg.UserAgent = "crashloop-storm"
	return kubernetes.NewForConfig(cfg)
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[storm %s] %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, a...))
}

// ------------------------------------------------------------------ setup

func cmdSetup(args []string) error {
	fs := flag.NewFlagSet("setup", flag.ExitOnError)
	var c common
	c.register(fs)
	pods := fs.Int("pods", 5000, "pods in total")
	nodes := fs.Int("nodes", 10, "kwok nodes kwok-storm-<i>")
	deployments := fs.Int("deployments", 10, "Deployments storm-<j> (pods split evenly; one node each, round-robin)")
	timeout := fs.Duration("timeout", 15*time.Minute, "how long to wait for every pod to run")
	_ = fs.Parse(args)
	cs, err := c.client()
	if err != nil {
		return err
	}
	ctx := context.Background()
	t0 := time.Now()

	for i := 0; i < *nodes; i++ {
		name := fmt.Sprintf("kwok-storm-%d", i)
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("1000"),
			corev1.ResourceMemory: resource.MustParse("4000Gi"),
			corev1.ResourcePods:   resource.MustParse(fmt.Sprint(*pods/(*nodes) + 100)),
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Annotations: map[string]string{
					"kwok.x-k8s.io/node":           "fake",
					"node.alpha.kubernetes.io/ttl": "0",
				},
				Labels: map[string]string{
					"type": "kwok", "crashdoc.test/storm": "true", "kubernetes.io/hostname": name,
					"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				},
			},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "crashdoc.test/storm", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("node %s: %w", name, err)
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.namespace}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// the namespace's default ServiceAccount must exist before pods can be created
	for {
		if _, err := cs.CoreV1().ServiceAccounts(c.namespace).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		if time.Since(t0) > time.Minute {
			return errors.New("no default ServiceAccount in the namespace after 60 s")
		}
		time.Sleep(300 * time.Millisecond)
	}
	for j := 0; j < *deployments; j++ {
		replicas := int32(*pods / *deployments)
		if j < *pods%*deployments {
			replicas++
		}
		name := fmt.Sprintf("storm-%d", j)
		labels := map[string]string{"app": name, "crashdoc.test/storm": "true"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						// pinned: no scheduling work for 5,000 pods
						NodeName:                      fmt.Sprintf("kwok-storm-%d", j%*nodes),
						Tolerations:                   []corev1.Toleration{{Key: "crashdoc.test/storm", Operator: corev1.TolerationOpExists}},
						TerminationGracePeriodSeconds: ptr(int64(0)),
						Containers: []corev1.Container{{
							Name:  "app",
							Image: "registry.example.com/storm/worker:1.4.2",
							Args:  []string{"--queue=jobs", "--concurrency=8"},
							Resources: corev1.ResourceRequirements{
								Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
								Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
							},
						}},
					},
				},
			},
		}
		if _, err := cs.AppsV1().Deployments(c.namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("deployment %s: %w", name, err)
		}
	}
	logf("created %d nodes and %d Deployments (%d pods); waiting until every pod runs", *nodes, *deployments, *pods)
	last := time.Time{}
	for {
		list, err := cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: "crashdoc.test/storm=true", ResourceVersion: "0"})
		if err != nil {
			logf("list: %v", err)
		} else {
			total, running := 0, 0
			for i := range list.Items {
				p := &list.Items[i]
				if p.DeletionTimestamp != nil {
					continue
				}
				total++
				// started by kwok (running), or already crash-looping from an earlier run
				if p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) > 0 &&
					(p.Status.ContainerStatuses[0].State.Running != nil || p.Status.ContainerStatuses[0].State.Waiting != nil) {
					running++
				}
			}
			if total == *pods && running == *pods {
				logf("all %d pods running after %.1f s", *pods, time.Since(t0).Seconds())
				fmt.Printf("{\"pods\":%d,\"setup_seconds\":%.1f}\n", *pods, time.Since(t0).Seconds())
				return nil
			}
			if time.Since(last) > 10*time.Second {
				logf("%d pods, %d running (%.0f s)", total, running, time.Since(t0).Seconds())
				last = time.Now()
			}
		}
		if time.Since(t0) > *timeout {
			return fmt.Errorf("not every pod runs after %s", *timeout)
		}
		time.Sleep(2 * time.Second)
	}
}

func ptr[T any](v T) *T { return &v }

// ------------------------------------------------------------------ teardown

func cmdTeardown(args []string) error {
	fs := flag.NewFlagSet("teardown", flag.ExitOnError)
	var c common
	c.register(fs)
	_ = fs.Parse(args)
	cs, err := c.client()
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := cs.CoreV1().Namespaces().Delete(ctx, c.namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "crashdoc.test/storm=true"})
}

// ------------------------------------------------------------------ count

type target struct {
	name, uid string
	container string
	image     string
	imageID   string
	// the status' restartCount: the restart count of the newest container,
	// the one running (or, crashed, the one that crashed)
	restarts   int32
	crashed    bool // state is waiting CrashLoopBackOff (the next termination restarts it first)
	startedAt  metav1.Time
	lastState  corev1.ContainerState
	runningCID string
	pod        *corev1.Pod // the last version written or read (--method put)
}

func listPods(ctx context.Context, cs *kubernetes.Clientset, c *common) ([]corev1.Pod, error) {
	list, err := cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: c.selector})
	if err != nil {
		return nil, err
	}
	pods := list.Items[:0]
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods, nil
}

func restartSum(pods []corev1.Pod) int64 {
	var n int64
	for _, p := range pods {
		for _, s := range p.Status.InitContainerStatuses {
			n += int64(s.RestartCount)
		}
		for _, s := range p.Status.ContainerStatuses {
			n += int64(s.RestartCount)
		}
	}
	return n
}

// endedRuns is how many runs of a container have ended by its status (the
// runs are numbered 0.. by the restart count each container was created
// with; restartCount R is the newest's): 0..R when the newest has ended, that
// is when state.terminated shows it, or the status waits in CrashLoopBackOff,
// or waits with lastState = the newest container (the same containerID, or no
// IDs); 0..R-1 while it runs or has not started (a created container waiting
// beside another lastState, ContainerCreating). As crashdoc watch's tracker
// numbers them (crates/crashdoc-kube/src/runs.rs last_state_run,
// ended_through); the storm's containers always keep running, so every end is
// a termination.
func endedRuns(s corev1.ContainerStatus) int64 {
	r := int64(s.RestartCount)
	last := s.LastTerminationState.Terminated
	switch {
	case s.State.Terminated != nil:
		return r + 1
	case s.State.Running != nil:
		return r
	case s.State.Waiting != nil && s.State.Waiting.Reason == "CrashLoopBackOff":
		return r + 1
	case last != nil && (s.ContainerID == "" || last.ContainerID == "" || s.ContainerID == last.ContainerID):
		return r + 1
	}
	return r
}

func endedSum(pods []corev1.Pod) int64 {
	var n int64
	for _, p := range pods {
		for _, s := range p.Status.InitContainerStatuses {
			n += endedRuns(s)
		}
		for _, s := range p.Status.ContainerStatuses {
			n += endedRuns(s)
		}
	}
	return n
}

func cmdCount(args []string) error {
	fs := flag.NewFlagSet("count", flag.ExitOnError)
	var c common
	c.register(fs)
	out := fs.String("out", "", "write uid, pod, container, restartCount, ended runs rows (TSV) here")
	_ = fs.Parse(args)
	cs, err := c.client()
	if err != nil {
		return err
	}
	pods, err := listPods(context.Background(), cs, &c)
	if err != nil {
		return err
	}
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		for _, p := range pods {
			for _, s := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
				fmt.Fprintf(f, "%s\t%s\t%s\t%d\t%d\n", p.UID, p.Name, s.Name, s.RestartCount, endedRuns(s))
			}
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	fmt.Printf("{\"pods\":%d,\"restart_count_total\":%d,\"ended_runs_total\":%d}\n", len(pods), restartSum(pods), endedSum(pods))
	return nil
}

// ------------------------------------------------------------------ run

type termination struct {
	index      int
	uid, pod   string
	container  string
	n          int32 // the dedup identity's N: the crashed container's restart count
	reason     string
	exitCode   int32
	finishedAt time.Time
	sent, done time.Time
	attempts   int
	err        error
}

type summary struct {
	Namespace            string         `json:"namespace"`
	Selector             string         `json:"selector"`
	Pods                 int            `json:"pods"`
	Requested            int            `json:"terminations_requested"`
	Produced             int            `json:"terminations_produced"`
	Failed               int            `json:"terminations_failed"`
	TwoStep              int            `json:"terminations_shown_terminated_first"`
	Restarts             int            `json:"restarts_to_running"`
	Patches              int64          `json:"status_patches"`
	Retries              int64          `json:"patch_retries"`
	TargetRate           float64        `json:"target_rate"`
	Started              time.Time      `json:"started"`
	Ended                time.Time      `json:"ended"`
	DurationSeconds      float64        `json:"duration_seconds"`
	RateAchieved         float64        `json:"rate_achieved"`
	MaxBehindMs          int64          `json:"max_behind_schedule_ms"`
	RestartCountBefore   int64          `json:"restart_count_before"`
	RestartCountAfter    int64          `json:"restart_count_after"`
	RestartCountIncrease int64          `json:"restart_count_increase"`
	EndedRunsBefore      int64          `json:"ended_runs_before"`
	EndedRunsAfter       int64          `json:"ended_runs_after"`
	EndedRunsIncrease    int64          `json:"ended_runs_increase"`
	Exact                bool           `json:"exact"`
	ByReason             map[string]int `json:"by_reason"`
	PatchLatencyMs       map[string]int `json:"patch_latency_ms"`
}

func containerID(uid string, name string, n int32) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d", uid, name, n)))
	return "containerd://" + hex.EncodeToString(h[:])
}

func cmdRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	var c common
	c.register(fs)
	rate := fs.Float64("rate", 100, "terminations per second")
	duration := fs.Duration("duration", 0, "how long (count = rate x duration)")
	count := fs.Int("count", 0, "how many terminations (instead of --duration)")
	workers := fs.Int("workers", 32, "concurrent writers (a pod always goes to the same one, so its updates stay in order)")
	out := fs.String("out", "", "write the summary JSON here too")
	logPath := fs.String("log", "", "write one TSV row per termination: uid pod container N reason exit_code finished_at sent_unix_ms done_unix_ms")
	twoStepEvery := fs.Int("terminated-first-every", 0, "every K-th termination is first shown as state.terminated (lastState the run before), then as waiting CrashLoopBackOff with lastState.terminated = the crashed run, restartCount unchanged in both, as the kubelet does between the exit and the back-off; 0: never")
	oomEvery := fs.Int("oom-every", 3, "every K-th termination is OOMKilled/137, the others Error/1")
	method := fs.String("method", "patch", "patch: strategic merge patch of pods/status, as the kubelet's status manager sends; put: update pods/status with the whole object (cheaper for the API server; re-read on conflict)")
	_ = fs.Parse(args)
	total := *count
	if total == 0 {
		total = int(*rate * duration.Seconds())
	}
	if total <= 0 {
		return errors.New("nothing to do: give --count or --duration")
	}
	cs, err := c.client()
	if err != nil {
		return err
	}
	ctx := context.Background()
	pods, err := listPods(ctx, cs, &c)
	if err != nil {
		return err
	}
	before, endedBefore := restartSum(pods), endedSum(pods)
	var targets []*target
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 || len(p.Spec.Containers) == 0 {
			continue
		}
		s := p.Status.ContainerStatuses[0]
		if s.State.Running == nil && (s.State.Waiting == nil || s.State.Waiting.Reason != "CrashLoopBackOff") {
			continue
		}
		t := &target{name: p.Name, uid: string(p.UID), container: s.Name, image: s.Image, imageID: s.ImageID,
			restarts: s.RestartCount, lastState: s.LastTerminationState, pod: p.DeepCopy()}
		if t.image == "" {
			t.image = p.Spec.Containers[0].Image
		}
		if t.imageID == "" {
			t.imageID = t.image + "@sha256:" + fmt.Sprintf("%x", sha256.Sum256([]byte(t.image)))
		}
		if s.State.Running != nil {
			t.startedAt = s.State.Running.StartedAt
			t.runningCID = s.ContainerID
		} else {
			t.crashed = true
		}
		if t.runningCID == "" {
			t.runningCID = containerID(t.uid, t.container, t.restarts)
		}
		targets = append(targets, t)
	}
	if len(targets) == 0 {
		return fmt.Errorf("no running or crash-looping pods in %s (selector %q)", c.namespace, c.selector)
	}
	logf("%d pods (%d eligible), restartCount total %d, ended runs %d; %d terminations at %.1f/s with %d writers",
		len(pods), len(targets), before, endedBefore, total, *rate, *workers)

	if *method != "patch" && *method != "put" {
		return fmt.Errorf("--method %q: patch or put", *method)
	}
	var patches, retries atomic.Int64
	patch := func(t *target, body []byte) (int, error) {
		var err error
		for attempt := 1; attempt <= 8; attempt++ {
			patches.Add(1)
			if *method == "patch" {
				_, err = cs.CoreV1().Pods(c.namespace).Patch(ctx, t.name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
			} else {
				err = putStatus(ctx, cs, c.namespace, t, body)
			}
			if err == nil {
				return attempt, nil
			}
			if apierrors.IsNotFound(err) {
				return attempt, err
			}
			retries.Add(1)
			time.Sleep(time.Duration(attempt*attempt) * 100 * time.Millisecond)
		}
		return 8, err
	}

	results := make([]termination, total)
	queues := make([]chan int, *workers)
	var wg sync.WaitGroup
	var twoStep, restartsRun atomic.Int64
	for w := range queues {
		queues[w] = make(chan int, 4096)
		wg.Add(1)
		go func(q chan int) {
			defer wg.Done()
			for i := range q {
				t := targets[i%len(targets)]
				r := &results[i]
				r.index, r.uid, r.pod, r.container = i, t.uid, t.name, t.container
				r.sent = time.Now()
				if t.crashed {
					// the kubelet restarts the container after the back-off: a new
					// container, created with the crashed one's restart count + 1
					// (kuberuntime_container.go startContainer), running; lastState kept
					now := metav1.NewTime(time.Now())
					next := t.restarts + 1
					cid := containerID(t.uid, t.container, next)
					body := statusPatch(t, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}, t.lastState, next, true, cid)
					if _, err := patch(t, body); err != nil {
						r.err = err
						r.done = time.Now()
						continue
					}
					t.restarts, t.runningCID = next, cid
					t.crashed = false
					t.startedAt = now
					restartsRun.Add(1)
				}
				r.reason, r.exitCode = "Error", 1
				if *oomEvery > 0 && i%*oomEvery == 0 {
					r.reason, r.exitCode = "OOMKilled", 137
				}
				finished := metav1.NewTime(time.Now())
				started := t.startedAt
				if started.IsZero() || !started.Before(&finished) {
					started = metav1.NewTime(finished.Add(-time.Second))
				}
				term := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: r.exitCode, Reason: r.reason, StartedAt: started, FinishedAt: finished, ContainerID: t.runningCID,
				}}
				r.n = t.restarts
				r.finishedAt = finished.Time
				attempts := 0
				if *twoStepEvery > 0 && i%*twoStepEvery == 0 {
					// the exit as the kubelet reports it first: state.terminated = the run,
					// lastState the run before, restartCount the run's
					a, err := patch(t, statusPatch(t, term, t.lastState, t.restarts, false, t.runningCID))
					attempts += a
					if err != nil {
						r.err, r.attempts, r.done = err, attempts, time.Now()
						continue
					}
					twoStep.Add(1)
				}
				backoff := []string{"10s", "20s", "40s", "1m20s", "2m40s", "5m0s"}[min(int(t.restarts), 5)]
				waiting := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason:  "CrashLoopBackOff",
					Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", backoff, t.container, t.name, c.namespace, t.uid),
				}}
				// the back-off: lastState = the crashed run, restartCount and the
				// status' containerID still the crashed container's (kubelet_pods.go
				// convertToAPIContainerStatuses: LastTerminationState = State)
				a, err := patch(t, statusPatch(t, waiting, term, t.restarts, false, ""))
				attempts += a
				r.attempts, r.err, r.done = attempts, err, time.Now()
				if err == nil {
					t.lastState = term
					t.crashed = true
				}
			}
		}(queues[w])
	}

	interval := time.Duration(float64(time.Second) / *rate)
	start := time.Now()
	var maxBehind time.Duration
	for i := 0; i < total; i++ {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		} else if -d > maxBehind {
			maxBehind = -d
		}
		queues[(i%len(targets))%*workers] <- i
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	end := time.Now()
	var lastDone time.Time
	for _, r := range results {
		if r.done.After(lastDone) {
			lastDone = r.done
		}
	}

	after, err := listPods(ctx, cs, &c)
	if err != nil {
		return err
	}
	s := summary{
		Namespace: c.namespace, Selector: c.selector, Pods: len(targets), Requested: total,
		TargetRate: *rate, Started: start, Ended: end, ByReason: map[string]int{},
		RestartCountBefore: before, RestartCountAfter: restartSum(after),
		EndedRunsBefore: endedBefore, EndedRunsAfter: endedSum(after),
		Patches: patches.Load(), Retries: retries.Load(), TwoStep: int(twoStep.Load()), Restarts: int(restartsRun.Load()),
		MaxBehindMs: maxBehind.Milliseconds(),
	}
	var lat []time.Duration
	var firstErr error
	for _, r := range results {
		if r.err != nil {
			s.Failed++
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		s.Produced++
		s.ByReason[r.reason]++
		lat = append(lat, r.done.Sub(r.sent))
	}
	s.RestartCountIncrease = s.RestartCountAfter - s.RestartCountBefore
	s.EndedRunsIncrease = s.EndedRunsAfter - s.EndedRunsBefore
	s.DurationSeconds = lastDone.Sub(start).Seconds()
	if s.DurationSeconds > 0 {
		// terminations per second over the span from the first due time to the last completed write
		s.RateAchieved = float64(s.Produced) / (lastDone.Sub(start).Seconds() + interval.Seconds())
	}
	s.Exact = s.Failed == 0 && s.EndedRunsIncrease == int64(s.Produced) && s.RestartCountIncrease == int64(s.Restarts)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) int {
		if len(lat) == 0 {
			return 0
		}
		return int(lat[min(len(lat)-1, int(p*float64(len(lat))))].Milliseconds())
	}
	s.PatchLatencyMs = map[string]int{"p50": pct(0.5), "p99": pct(0.99), "max": pct(1)}

	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			return err
		}
		for _, r := range results {
			if r.err != nil {
				continue
			}
			fmt.Fprintf(f, "%s\t%s\t%s\t%d\t%s\t%d\t%s\t%d\t%d\n", r.uid, r.pod, r.container, r.n, r.reason, r.exitCode,
				r.finishedAt.UTC().Format(time.RFC3339), r.sent.UnixMilli(), r.done.UnixMilli())
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	js, _ := json.Marshal(s)
	fmt.Println(string(js))
	if *out != "" {
		if err := os.WriteFile(*out, append(js, '\n'), 0o644); err != nil {
			return err
		}
	}
	logf("produced %d of %d terminations in %.2f s (%.2f/s, target %.1f/s; max %d ms behind schedule); ended runs %d -> %d (+%d); restartCount %d -> %d (+%d, %d restarts written); patch latency p50 %d ms p99 %d ms",
		s.Produced, total, s.DurationSeconds, s.RateAchieved, *rate, s.MaxBehindMs, s.EndedRunsBefore, s.EndedRunsAfter, s.EndedRunsIncrease,
		s.RestartCountBefore, s.RestartCountAfter, s.RestartCountIncrease, s.Restarts, s.PatchLatencyMs["p50"], s.PatchLatencyMs["p99"])
	if !s.Exact {
		if firstErr != nil {
			return fmt.Errorf("%d terminations failed (first: %v); ended runs increase %d", s.Failed, firstErr, s.EndedRunsIncrease)
		}
		return fmt.Errorf("ended runs increased by %d for %d terminations written, restartCount by %d for %d restarts written: something else changed the statuses", s.EndedRunsIncrease, s.Produced, s.RestartCountIncrease, s.Restarts)
	}
	return nil
}

// putStatus applies the same change as the patch body to the last known
// object and writes it with an update of pods/status; on a conflict it reads
// the pod again (the next attempt uses it).
func putStatus(ctx context.Context, cs *kubernetes.Clientset, ns string, t *target, body []byte) error {
	var p struct {
		Status struct {
			Conditions        []corev1.PodCondition    `json:"conditions"`
			ContainerStatuses []corev1.ContainerStatus `json:"containerStatuses"`
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return err
	}
	pod := t.pod.DeepCopy()
	for _, c := range p.Status.Conditions {
		found := false
		for i := range pod.Status.Conditions {
			if pod.Status.Conditions[i].Type == c.Type {
				pod.Status.Conditions[i] = c
				found = true
			}
		}
		if !found {
			pod.Status.Conditions = append(pod.Status.Conditions, c)
		}
	}
	pod.Status.ContainerStatuses = p.Status.ContainerStatuses
	got, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err == nil {
		t.pod = got
		return nil
	}
	if apierrors.IsConflict(err) {
		if fresh, gerr := cs.CoreV1().Pods(ns).Get(ctx, t.name, metav1.GetOptions{}); gerr == nil {
			t.pod = fresh
		}
	}
	return err
}

// statusPatch is a strategic merge patch of pods/status: conditions merge by
// type, containerStatuses (no merge key) is replaced as a whole, as the
// kubelet's status manager effectively does.
func statusPatch(t *target, state, last corev1.ContainerState, restarts int32, ready bool, cid string) []byte {
	now := metav1.NewTime(time.Now())
	cond := func(typ string) map[string]any {
		m := map[string]any{"type": typ, "lastTransitionTime": now}
		if ready {
			m["status"] = "True"
		} else {
			m["status"] = "False"
			m["reason"] = "ContainersNotReady"
			m["message"] = fmt.Sprintf("containers with unready status: [%s]", t.container)
		}
		return m
	}
	cs := corev1.ContainerStatus{
		Name: t.container, Image: t.image, ImageID: t.imageID, Ready: ready, Started: ptr(state.Running != nil),
		RestartCount: restarts, State: state, LastTerminationState: last, ContainerID: cid,
	}
	if state.Terminated != nil {
		cs.ContainerID = state.Terminated.ContainerID
	}
	if state.Waiting != nil && last.Terminated != nil {
		cs.ContainerID = last.Terminated.ContainerID
	}
	body := map[string]any{"status": map[string]any{
		"conditions":        []any{cond("Ready"), cond("ContainersReady")},
		"containerStatuses": []corev1.ContainerStatus{cs},
	}}
	js, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	return js
}
