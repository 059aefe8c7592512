package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// healthcheck is `coppice healthcheck`: it asks a server's /healthz and
// exits 0 on 200, 1 otherwise. Container images without a shell or curl
// run it as their health check. The default URL is the local server of
// COPPICE_ADDR, an unspecified host meaning loopback.
func healthcheck(args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("coppice healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "the health URL; default http://<COPPICE_ADDR>/healthz")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" {
		*url = "http://" + localAddr(getenv("COPPICE_ADDR")) + "/healthz"
	}
	c := &http.Client{Timeout: *timeout}
	resp, err := c.Get(*url)
	if err != nil {
		fmt.Fprintf(stderr, "coppice healthcheck: %v\n", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "coppice healthcheck: %s answered %d\n", *url, resp.StatusCode)
		return 1
	}
	return 0
}

// localAddr turns a listen address into one to dial on this host: the
// default when empty, loopback for an unspecified host.
func localAddr(addr string) string {
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
