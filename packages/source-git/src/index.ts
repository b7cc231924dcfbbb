// Public entry point of @syncline/source-git: every export is named here.
export {};
