// Test-only helpers: the real control plane, per-test namespaces and a real Git server.
export {};
