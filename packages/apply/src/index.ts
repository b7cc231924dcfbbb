// Public entry point of @syncline/apply: every export is named here.
export {};
