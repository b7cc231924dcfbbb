// Public entry point of @syncline/operator: every export is named here.
export {};
