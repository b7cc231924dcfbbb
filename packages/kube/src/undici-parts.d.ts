// The parts of undici the REST client uses, imported by their own files (transport.ts says why): the classes'
// types are the package's own.
declare module 'undici/lib/dispatcher/pool.js' {
  import type { Pool } from 'undici';
  const PoolClass: typeof Pool;
  export default PoolClass;
}
declare module 'undici/lib/dispatcher/proxy-agent.js' {
  import type { ProxyAgent } from 'undici';
  const ProxyAgentClass: typeof ProxyAgent;
  export default ProxyAgentClass;
}
declare module 'undici/lib/core/symbols.js' {
  const symbols: { readonly kQueuedAbort: symbol };
  export default symbols;
}
