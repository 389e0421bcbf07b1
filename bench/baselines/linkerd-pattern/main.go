// A faithful peer for the benchmark: linkerd-cni's ADD as a Go chained plugin does it
// (reference §2), with the Go standard library only. It reads the netconf on stdin and
// CNI_* from the environment, GETs the pod and its namespace from the API server over
// one TLS connection (bearer token, the cluster's CA), reads the nat table with
// `nsenter --net=<netns> iptables-save`, then runs one `nsenter --net=<netns> iptables -t
// nat …` process per rule and a final save, and prints its prevResult.
//
// Usage: linkerd-pattern -server URL -token-file F -ca-file F -rules F -backend nft|legacy
// (the rules file: one iptables argument list per line, as the bash baseline reads them).
package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

func fail(format string, args ...any) {
	fmt.Printf(`{"cniVersion":"1.0.0","code":999,"msg":%q}`+"\n", fmt.Sprintf(format, args...))
	os.Exit(1)
}

func run(args ...string) {
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		fail("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func main() {
	server := flag.String("server", "", "API server URL")
	tokenFile := flag.String("token-file", "", "bearer token file")
	caFile := flag.String("ca-file", "", "CA certificate file")
	rulesFile := flag.String("rules", "", "rules, one iptables argument list per line")
	backend := flag.String("backend", "nft", "iptables backend")
	flag.Parse()

	var conf struct {
		CNIVersion string          `json:"cniVersion"`
		PrevResult json.RawMessage `json:"prevResult"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&conf); err != nil {
		fail("netconf: %v", err)
	}
	args := map[string]string{}
	for _, pair := range strings.Split(os.Getenv("CNI_ARGS"), ";") {
		if key, value, ok := strings.Cut(pair, "="); ok {
			args[key] = value
		}
	}
	namespace, name := args["K8S_POD_NAMESPACE"], args["K8S_POD_NAME"]

	token, err := os.ReadFile(*tokenFile)
	if err != nil {
		fail("token: %v", err)
	}
	caPem, err := os.ReadFile(*caFile)
	if err != nil {
		fail("ca: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPem)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(path string) map[string]any {
		req, _ := http.NewRequest(http.MethodGet, *server+path, nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		res, err := client.Do(req)
		if err != nil {
			fail("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
			fail("GET %s: %d %v", path, res.StatusCode, err)
		}
		return body
	}
	pod := get("/api/v1/namespaces/" + namespace + "/pods/" + name)
	get("/api/v1/namespaces/" + namespace)
	if pod["kind"] != "Pod" {
		fail("not a pod")
	}

	netns := "--net=" + os.Getenv("CNI_NETNS")
	run("nsenter", netns, "iptables-"+*backend+"-save", "-t", "nat")
	rules, err := os.Open(*rulesFile)
	if err != nil {
		fail("rules: %v", err)
	}
	scanner := bufio.NewScanner(rules)
	for scanner.Scan() {
		run(append([]string{"nsenter", netns, "iptables-" + *backend, "-t", "nat"}, strings.Fields(scanner.Text())...)...)
	}
	run("nsenter", netns, "iptables-"+*backend+"-save", "-t", "nat")
	if len(conf.PrevResult) > 0 {
		fmt.Println(string(conf.PrevResult))
	} else {
		fmt.Printf(`{"cniVersion":%q}`+"\n", conf.CNIVersion)
	}
}
