// syncline-render: the official Kustomize, Helm and Jsonnet engines as one long-lived process. The operator
// starts it once and sends render requests over stdin; each answer goes back over stdout. A request carries
// the repository files it may read, and every engine reads them from memory: nothing on disk, no network, no
// program started, so a render can see only the snapshot it was given.
//
// Framing: each message is a 4-byte big-endian length followed by that many bytes of JSON. One request is
// answered before the next is read. Exit codes: 3 = the memory limit was exceeded (the client reports it).
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"
)

// File is one repository file: a repo-relative path and its bytes.
type File struct {
	Path string `json:"path"`
	Data []byte `json:"data"`
}

// Request asks for one render by one engine.
type Request struct {
	Engine         string             `json:"engine"`
	Files          []File             `json:"files"`
	Kustomize      *KustomizeInput    `json:"kustomize,omitempty"`
	Helm           *HelmInput         `json:"helm,omitempty"`
	Jsonnet        *JsonnetInput      `json:"jsonnet,omitempty"`
	ChartVersion   *ChartVersionInput `json:"chartVersion,omitempty"`
	MaxOutputBytes int                `json:"maxOutputBytes,omitempty"`
}

// Object is one rendered Kubernetes object as JSON, with the file it came from when the engine says.
type Object struct {
	Source string          `json:"source,omitempty"`
	Object json.RawMessage `json:"object"`
}

// Failure says why a render failed. Kind is a closed set: invalid (the input is wrong), refused (the input
// asks for what a render may not do: network, programs, files outside the repository), limit (output size).
type Failure struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Response answers one Request.
type Response struct {
	Objects []Object `json:"objects,omitempty"`
	Error   *Failure `json:"error,omitempty"`
	Ms      float64  `json:"ms"`
}

type renderError struct {
	kind    string
	message string
}

func (e *renderError) Error() string { return e.message }

func invalid(format string, args ...any) error {
	return &renderError{kind: "invalid", message: fmt.Sprintf(format, args...)}
}

func refused(format string, args ...any) error {
	return &renderError{kind: "refused", message: fmt.Sprintf(format, args...)}
}

const maxRequestBytes = 512 << 20

func main() {
	isolate()
	if limit, err := strconv.ParseInt(os.Getenv("SYNCLINE_RENDER_MEMORY_LIMIT"), 10, 64); err == nil && limit > 0 {
		watchMemory(uint64(limit))
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	for {
		payload, err := readFrame(in)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "syncline-render: reading a request: %v\n", err)
			os.Exit(2)
		}
		response := serve(payload)
		body, err := json.Marshal(response)
		if err != nil {
			body, _ = json.Marshal(Response{Error: &Failure{Kind: "invalid", Message: "the output cannot be encoded as JSON: " + err.Error()}})
		}
		if err := writeFrame(out, body); err != nil {
			os.Exit(2)
		}
	}
}

func serve(payload []byte) Response {
	started := time.Now()
	var request Request
	if err := json.Unmarshal(payload, &request); err != nil {
		return Response{Error: &Failure{Kind: "invalid", Message: "a malformed request: " + err.Error()}}
	}
	objects, err := render(&request)
	elapsed := float64(time.Since(started).Microseconds()) / 1000
	if err != nil {
		var failure *renderError
		if errors.As(err, &failure) {
			return Response{Error: &Failure{Kind: failure.kind, Message: request.Engine + ": " + failure.message}, Ms: elapsed}
		}
		return Response{Error: &Failure{Kind: "invalid", Message: request.Engine + ": " + err.Error()}, Ms: elapsed}
	}
	size := 0
	for _, o := range objects {
		size += len(o.Object)
	}
	if request.MaxOutputBytes > 0 && size > request.MaxOutputBytes {
		return Response{Error: &Failure{Kind: "limit", Message: fmt.Sprintf("%s: the output is %d bytes, over the limit of %d bytes", request.Engine, size, request.MaxOutputBytes)}, Ms: elapsed}
	}
	return Response{Objects: objects, Ms: elapsed}
}

func render(request *Request) (objects []Object, err error) {
	// An engine that panics on hostile input fails this render, not the process.
	defer func() {
		if r := recover(); r != nil {
			err = invalid("the engine failed: %v", r)
		}
	}()
	switch request.Engine {
	case "kustomize":
		if request.Kustomize == nil {
			return nil, invalid("the request has no kustomize input")
		}
		return renderKustomize(request.Files, request.Kustomize)
	case "helm":
		if request.Helm == nil {
			return nil, invalid("the request has no helm input")
		}
		return renderHelm(request.Files, request.Helm)
	case "jsonnet":
		if request.Jsonnet == nil {
			return nil, invalid("the request has no jsonnet input")
		}
		return renderJsonnet(request.Files, request.Jsonnet)
	case "chartVersion":
		if request.ChartVersion == nil {
			return nil, invalid("the request has no chartVersion input")
		}
		return chooseChartVersion(request.ChartVersion)
	}
	return nil, invalid("unknown engine %q", request.Engine)
}

func readFrame(in *bufio.Reader) ([]byte, error) {
	var header [4]byte
	if _, err := io.ReadFull(in, header[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(header[:])
	if size > maxRequestBytes {
		return nil, fmt.Errorf("a request of %d bytes is over the limit of %d", size, maxRequestBytes)
	}
	payload := make([]byte, size)
	if _, err := io.ReadFull(in, payload); err != nil {
		return nil, err
	}
	return payload, nil
}

func writeFrame(out *bufio.Writer, body []byte) error {
	var header [4]byte
	binary.BigEndian.PutUint32(header[:], uint32(len(body)))
	if _, err := out.Write(header[:]); err != nil {
		return err
	}
	if _, err := out.Write(body); err != nil {
		return err
	}
	return out.Flush()
}

// errNoNetwork is what every network path in this process answers.
var errNoNetwork = errors.New("network access is disabled in the render process: a render reads only the repository")

// isolate closes the ways out an engine has on its own: programs looked up on PATH (Kustomize clones remote
// bases with `git`), HTTP through the default transport (remote resources), name resolution, and proxies from
// the environment. Engines receive their files in memory and never see the disk.
func isolate() {
	os.Setenv("PATH", "")
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy", "KUBECONFIG"} {
		os.Unsetenv(name)
	}
	refuse := func(context.Context, string, string) (net.Conn, error) { return nil, errNoNetwork }
	http.DefaultTransport = &http.Transport{DialContext: refuse, DialTLSContext: refuse, Proxy: nil}
	http.DefaultClient = &http.Client{Transport: http.DefaultTransport}
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: refuse}
}

// watchMemory ends the process when its heap passes the limit: a render that explodes (a YAML alias bomb, a
// loop building strings) is stopped here, and the client starts a fresh process for the next render.
func watchMemory(limit uint64) {
	debug.SetMemoryLimit(int64(limit) * 3 / 4)
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		for {
			metrics.Read(samples)
			if samples[0].Value.Kind() == metrics.KindUint64 && samples[0].Value.Uint64() > limit {
				fmt.Fprintf(os.Stderr, "syncline-render: memory limit of %d bytes exceeded\n", limit)
				os.Exit(3)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}
