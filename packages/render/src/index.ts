// Public entry point of @syncline/render: every export is named here.
export {};
