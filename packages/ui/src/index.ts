// Public entry point of @syncline/ui: the web UI, a client of the operator (through @syncline/operator/client).
// The `syncline` binary plugs createWebUi() into runOperator; src/build.ts (`pnpm build:ui`, a script outside this
// entry point) bundles the page in src/client into dist/ui, where the server reads it.
export { createWebUi } from './web-ui.ts';
export { startUiServer, uiSignIn, UI_ASSETS_DIR } from './server.ts';
export type { UiServer, UiServerOptions } from './server.ts';
