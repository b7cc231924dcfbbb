// undici's Client, imported by its own file (transport.ts says why): the class's type is the package's own.
declare module 'undici/lib/dispatcher/client.js' {
  import type { Client } from 'undici';
  const ClientClass: typeof Client;
  export default ClientClass;
}
