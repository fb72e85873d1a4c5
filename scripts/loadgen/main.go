// Command loadgen is the API client of scripts/bench-serve.sh: CLIENTS
// concurrent clients approve the tasks named in FILE (one task id a line)
// through a running `assistant serve`, each task once, each client
// posting its next approval when the server answered the last one (a
// reply comes only once the decision is durable in both stores). It
// prints the decisions per second over the whole run, and the 50th and
// 99th percentile latency of one request, as `name value unit` lines; any
// answer but 200 with status done fails it.
//
//	go run ./scripts/loadgen -url http://127.0.0.1:8080 -token TOKEN -clients 64 FILE
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	url := flag.String("url", "", "the server's base URL; several, comma-separated, share the clients in turn")
	token := flag.String("token", "", "an access token of the tasks' owner")
	clients := flag.Int("clients", 64, "concurrent clients")
	prefix := flag.String("prefix", "serve", "the first word of each printed name")
	flag.Parse()
	if *url == "" || *token == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: loadgen -url URL -token TOKEN [-clients N] [-prefix NAME] FILE")
		os.Exit(2)
	}
	tasks, err := readTasks(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
	if err := run(*url, *token, *prefix, *clients, tasks); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// readTasks reads the task ids of path, one a line.
func readTasks(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var tasks []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			tasks = append(tasks, t)
		}
	}
	return tasks, sc.Err()
}

// run approves tasks with clients concurrent clients, client c posting
// to the c-th of the comma-separated urls (in turn), and prints the rate
// and the latencies.
func run(url, token, prefix string, clients int, tasks []string) error {
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = clients
	urls := strings.Split(url, ",")
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	began := time.Now()
	for c := range clients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(tasks) {
					return
				}
				t := time.Now()
				if err := approve(urls[c%len(urls)], token, tasks[i]); err != nil {
					errs <- err
					return
				}
				lat[c] = append(lat[c], time.Since(t))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	fmt.Printf("%s_decisions_per_s %.0f decisions/s\n", prefix, float64(len(all))/elapsed.Seconds())
	fmt.Printf("%s_p50_ms %.1f ms\n", prefix, pct(0.50))
	fmt.Printf("%s_p99_ms %.1f ms\n", prefix, pct(0.99))
	return nil
}

// approve posts the approval of task's version 1 and checks the answer.
func approve(url, token, task string) error {
	req, err := http.NewRequest("POST", url+"/api/v1/tasks/"+task+"/answers", strings.NewReader(`{"action":"approve","version":1}`))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var v struct {
		Status string `json:"status"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &v) != nil || v.Status != "done" {
		return fmt.Errorf("approve %s: %d %s", task, resp.StatusCode, b)
	}
	return nil
}
