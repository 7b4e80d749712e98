package regina_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	regina "regina.dev/sdk/go"
)

// The README's samples are complete programs. These tests extract them from README.md and run
// them with `go run` against the live broker, so the documentation cannot drift from the API.
// The only changes made to the text are the broker URL and unique queue names.

var sampleBlock = regexp.MustCompile("(?s)<!-- sample: ([a-z]+) -->\n```go\n(.*?)```")

func readmeSamples(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	samples := map[string]string{}
	for _, m := range sampleBlock.FindAllStringSubmatch(string(data), -1) {
		samples[m[1]] = m[2]
	}
	for _, name := range []string{"produce", "consume", "pipeline", "stream"} {
		if samples[name] == "" {
			t.Fatalf("README.md has no %q sample", name)
		}
	}
	return samples
}

func TestReadmeSamplesAreFormattedAndVetted(t *testing.T) {
	for name, src := range readmeSamples(t) {
		dir := sampleModule(t, name, src)
		if out, err := exec.Command("gofmt", "-l", dir).CombinedOutput(); err != nil || len(out) > 0 {
			t.Fatalf("sample %s is not gofmt-formatted: %s %v", name, out, err)
		}
		if out, err := goCommand(dir, "vet", ".").CombinedOutput(); err != nil {
			t.Fatalf("go vet on sample %s: %v\n%s", name, err, out)
		}
	}
}

func TestReadmeSamplesRunAgainstTheBroker(t *testing.T) {
	url := brokerURL(t)
	samples := readmeSamples(t)
	suffix := strings.TrimPrefix(uniqueName(""), "-")
	orders, shipments, revenue := "orders-"+suffix, "shipments-"+suffix, "revenue-"+suffix
	module := func(name string) string {
		src := strings.ReplaceAll(samples[name], `"http://localhost:6632"`, fmt.Sprintf("%q", url))
		src = strings.ReplaceAll(src, `"orders"`, fmt.Sprintf("%q", orders))
		src = strings.ReplaceAll(src, `"shipments"`, fmt.Sprintf("%q", shipments))
		src = strings.ReplaceAll(src, `"customer-revenue"`, fmt.Sprintf("%q", revenue))
		src = strings.ReplaceAll(src, `"revenue-per-second"`, fmt.Sprintf("%q", revenue+"-query"))
		return sampleModule(t, name, src)
	}
	run := func(name string) []string {
		dir := module(name)
		out, err := goCommand(dir, "run", ".").CombinedOutput()
		if err != nil {
			t.Fatalf("sample %s failed: %v\n%s", name, err, out)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}

	if got := run("produce"); fmt.Sprint(got) != "[[queued queued]]" {
		t.Fatalf("produce printed %q", got)
	}
	billed := run("consume")
	want := []string{
		`billing customer-42 {"amount":25,"orderId":1}`,
		`billing customer-42 {"amount":40,"orderId":2}`,
		"handled 2 messages",
	}
	if fmt.Sprint(billed) != fmt.Sprint(want) {
		t.Fatalf("consume printed %q, want %q", billed, want)
	}
	shipped := run("pipeline")
	if len(shipped) != 2 || shipped[0] != `shipped {"amount":25,"orderId":1}` {
		t.Fatalf("pipeline printed %q", shipped[:min(len(shipped), 3)])
	}

	// The stage pushed one shipment per order, each exactly once, in order.
	c := liveClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs, err := c.Queue(shipments).Partition("customer-42").Batch(10).AutoAck(true).Pop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[1].TransactionID != "ship-order-2" {
		t.Fatalf("shipments %v", msgs)
	}
	var shipment struct {
		Order  struct{ OrderID int }
		Status string
	}
	if err := msgs[0].Decode(&shipment); err != nil || shipment.Order.OrderID != 1 || shipment.Status != "ready" {
		t.Fatalf("first shipment %s (%v)", msgs[0].Data, err)
	}

	runStreamSample(t, module("stream"), c.Queue(revenue).Partition("customer-42"))
}

// runStreamSample runs the stream sample until its window total is in the sink, then interrupts
// it as Ctrl-C would, and checks what it wrote and printed.
func runStreamSample(t *testing.T, dir string, sink *regina.Queue) {
	binary := filepath.Join(dir, "stream-sample")
	if out, err := goCommand(dir, "build", "-o", binary, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the stream sample: %v\n%s", err, out)
	}
	var output strings.Builder
	cmd := exec.Command(binary)
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var totals []*regina.Message
	for len(totals) == 0 && ctx.Err() == nil {
		totals, _ = sink.Batch(10).AutoAck(true).Pop(ctx)
		time.Sleep(200 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("stream sample: %v\n%s", err, output.String())
	}
	var total struct {
		Customer    string
		Count       float64
		Revenue     float64
		WindowStart time.Time
	}
	if len(totals) != 1 || totals[0].Decode(&total) != nil || total.Customer != "customer-42" ||
		total.Count != 2 || total.Revenue != 65 || total.WindowStart.IsZero() {
		t.Fatalf("revenue %s\n%s", totals[0].Data, output.String())
	}
	if !strings.HasSuffix(strings.TrimSpace(output.String()), "settled 2 orders") {
		t.Fatalf("stream sample printed %q", output.String())
	}
}

// sampleModule writes src as the main package of a throw-away module that uses this checkout of
// the SDK.
func sampleModule(t *testing.T, name, src string) string {
	t.Helper()
	sdk, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mod := fmt.Sprintf("module sample/%s\n\ngo 1.22\n\nrequire regina.dev/sdk/go v0.0.0\n\nreplace regina.dev/sdk/go => %s\n", name, sdk)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// goCommand runs the go tool in dir without network access or a workspace.
func goCommand(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=mod")
	return cmd
}
