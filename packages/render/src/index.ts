// Public entry point of @syncline/render: every export is named here.
export { renderTarget, defaultRenderLimits, DataType } from './render.ts';
export type { RenderTargetOptions, RenderTarget, RenderSource, RenderLimits, DataModeSpec } from './render.ts';
export { layerValues, parseValues } from './values.ts';
export type { Values } from './values.ts';
export { RenderError, RenderErrorReason, isRenderError } from './errors.ts';
export type { RenderErrorInit } from './errors.ts';
export { TemplateCache } from './template.ts';
export { compileMessageTemplate } from './message.ts';
export type { MessageTemplate } from './message.ts';
export { createStaticDiscovery } from './discovery.ts';
export { mergePatch } from './objects.ts';
export type { ApiDiscovery, KubernetesObject, ObjectMeta, TargetPatch } from './objects.ts';
export type { SourceFile, SourceFiles } from './files.ts';
export { finishObjects } from './render.ts';
export { RenderEngine, EngineFailure, EngineFailureKind, EngineName, defaultEngineLimits } from './engines/process.ts';
export type { EngineLimits, EngineRequest, EngineObject, EngineFile, RenderEngineOptions, RenderEngineStats } from './engines/process.ts';
export { renderWithEngine, detectEngine, EngineRenderCache, kustomizationFileNames } from './engines/render.ts';
export type { EngineRenderOptions, EngineSpec, KustomizeOptions, HelmOptions, JsonnetOptions, ClusterCapabilities } from './engines/render.ts';
