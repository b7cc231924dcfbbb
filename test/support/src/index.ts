// Test-only helpers: the real control plane, a real Git server and a real Git forge (Gitea). Helpers that
// need the vitest run (the shared cluster's kubeconfig, per-test namespaces) live in '@syncline/test-support/kube'.
export { ensureControlPlaneBinary, startControlPlane, MissingGoError } from './control-plane.ts';
export type { ControlPlane, ControlPlaneOptions } from './control-plane.ts';
export { ensureGoTool } from './go-tool.ts';
export type { GoTool, GoToolOptions } from './go-tool.ts';
export { startGitServer, generateRepo } from './git-server.ts';
export type { GitServer, TestRepo } from './git-server.ts';
export { GITEA_MODULE, ensureGiteaBinary, startGitea } from './gitea.ts';
export type { Gitea, GiteaBinary, GiteaCommitState, GiteaCommitStatus, GiteaHook, GiteaOptions, GiteaRepo } from './gitea.ts';
export { OPERATOR_NODE_FLAGS, startOperator } from './operator.ts';
export type { OperatorProcess } from './operator.ts';
export { CHROMIUM_PATH, ensureChromium } from './browser.ts';
export { startSshGitServer, generateSshKey, ensureSshd } from './ssh-server.ts';
export type { SshGitServer, SshKeyPair } from './ssh-server.ts';
export { startConnectProxy } from './connect-proxy.ts';
export type { ConnectProxy } from './connect-proxy.ts';
export { createTestCa } from './tls.ts';
export type { TestCa } from './tls.ts';
export { startOidcIssuer } from './oidc-issuer.ts';
export type { OidcIssuer, OidcUser } from './oidc-issuer.ts';
export { forgeStatusApi, startHttpReceiver } from './receiver.ts';
export type { Answer, ForgeStatus, HttpReceiver, ReceivedRequest, Responder } from './receiver.ts';
export { ensureRenderEngine } from './render-engine.ts';
export { HELM_VERSION, KUSTOMIZE_VERSION, JSONNET_VERSION, ensureHelm, ensureKustomize, ensureJsonnet } from './engine-tools.ts';
