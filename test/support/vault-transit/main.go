// A Vault-compatible server for tests: Vault's own transit secrets engine
// (github.com/hashicorp/vault/builtin/logical/transit, the code `vault server`
// mounts at transit/) behind a small HTTP layer that does what Vault's HTTP
// layer does for it: /v1/<mount>/<path> with X-Vault-Token, the method mapped
// to an operation (POST and PUT are update, or create when the engine's
// existence check says the item does not exist yet), the JSON body as request
// data, and the answer or error shaped as Vault shapes it
// (logical.RespondErrorCommon). Storage is in memory, like `vault server -dev`.
//
// Building the whole Vault or OpenBao server from its module takes far longer
// than this engine alone, and tests need nothing else of it.
//
// Flags: -listen 127.0.0.1:PORT, -token ROOT_TOKEN, -mount transit (repeatable
// as a comma-separated list). Prints "listening on ADDR" once it serves.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/hashicorp/go-uuid"
	"github.com/hashicorp/vault/builtin/logical/transit"
	"github.com/hashicorp/vault/sdk/helper/jsonutil"
	"github.com/hashicorp/vault/sdk/logical"
)

type server struct {
	token  string
	mounts map[string]logical.Backend
	stores map[string]logical.Storage
	// Vault serialises nothing here, but the in-memory storage is not a
	// transaction: one request at a time keeps the engine's view consistent.
	mu sync.Mutex
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	token := flag.String("token", "", "the only token accepted (the dev server's root token)")
	mounts := flag.String("mount", "transit", "comma-separated mount paths of the transit engine")
	flag.Parse()
	if *token == "" {
		log.Fatal("-token is required")
	}
	s := &server{token: *token, mounts: map[string]logical.Backend{}, stores: map[string]logical.Storage{}}
	ctx := context.Background()
	for _, mount := range strings.Split(*mounts, ",") {
		mount = strings.Trim(mount, "/")
		storage := &logical.InmemStorage{}
		id, _ := uuid.GenerateUUID()
		backend, err := transit.Factory(ctx, &logical.BackendConfig{
			StorageView: storage,
			System:      logical.StaticSystemView{DefaultLeaseTTLVal: 0, MaxLeaseTTLVal: 0},
			BackendUUID: id,
			Config:      map[string]string{},
		})
		if err != nil {
			log.Fatalf("transit engine at %s: %v", mount, err)
		}
		if err := backend.Initialize(ctx, &logical.InitializationRequest{Storage: storage}); err != nil {
			log.Fatalf("transit engine at %s: %v", mount, err)
		}
		s.mounts[mount] = backend
		s.stores[mount] = storage
	}
	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stdout, "listening on %s\n", listener.Addr().String())
	log.Fatal(http.Serve(listener, s))
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/sys/health" {
		respond(w, http.StatusOK, map[string]any{"initialized": true, "sealed": false, "standby": false})
		return
	}
	if r.Header.Get("X-Vault-Token") != s.token {
		respond(w, http.StatusForbidden, map[string]any{"errors": []string{"permission denied"}})
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	if !ok {
		respond(w, http.StatusNotFound, map[string]any{"errors": []string{}})
		return
	}
	mount, path := "", ""
	for candidate := range s.mounts {
		if rest == candidate || strings.HasPrefix(rest, candidate+"/") {
			mount, path = candidate, strings.TrimPrefix(strings.TrimPrefix(rest, candidate), "/")
		}
	}
	if mount == "" {
		respond(w, http.StatusNotFound, map[string]any{"errors": []string{fmt.Sprintf("no handler for route %q. route entry not found.", rest)}})
		return
	}
	req := &logical.Request{Path: path, Storage: s.stores[mount], Connection: &logical.Connection{RemoteAddr: r.RemoteAddr}, ClientToken: s.token}
	switch r.Method {
	case http.MethodGet:
		req.Operation = logical.ReadOperation
		if r.URL.Query().Get("list") == "true" {
			req.Operation = logical.ListOperation
		}
	case "LIST":
		req.Operation = logical.ListOperation
	case http.MethodPost, http.MethodPut:
		req.Operation = logical.UpdateOperation
		data := map[string]interface{}{}
		body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
		if err == nil && len(strings.TrimSpace(string(body))) > 0 {
			err = jsonutil.DecodeJSON(body, &data)
		}
		if err != nil {
			respond(w, http.StatusBadRequest, map[string]any{"errors": []string{"error parsing JSON"}})
			return
		}
		req.Data = data
	case http.MethodDelete:
		req.Operation = logical.DeleteOperation
	default:
		respond(w, http.StatusMethodNotAllowed, map[string]any{"errors": []string{}})
		return
	}
	if req.Operation == logical.ListOperation && !strings.HasSuffix(req.Path, "/") {
		req.Path += "/"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	backend := s.mounts[mount]
	ctx := r.Context()
	if req.Operation == logical.UpdateOperation {
		// Vault's router: an update of something that does not exist yet is a create.
		checkFound, exists, err := backend.HandleExistenceCheck(ctx, req)
		if err == nil && checkFound && !exists {
			req.Operation = logical.CreateOperation
		}
	}
	resp, err := backend.HandleRequest(ctx, req)
	if errors.Is(err, logical.ErrUnsupportedPath) || errors.Is(err, logical.ErrUnsupportedOperation) {
		respond(w, http.StatusNotFound, map[string]any{"errors": []string{err.Error()}})
		return
	}
	if status, rerr := logical.RespondErrorCommon(req, resp, err); rerr != nil {
		if status == 0 {
			status = http.StatusInternalServerError
		}
		respond(w, status, map[string]any{"errors": []string{rerr.Error()}})
		return
	}
	if resp == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	id, _ := uuid.GenerateUUID()
	respond(w, http.StatusOK, map[string]any{
		"request_id": id, "lease_id": "", "renewable": false, "lease_duration": 0,
		"data": resp.Data, "wrap_info": nil, "warnings": resp.Warnings, "auth": nil,
	})
}

func respond(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
