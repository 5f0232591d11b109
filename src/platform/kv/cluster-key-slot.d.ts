/** cluster-key-slot (ioredis's own dependency) ships without types. */
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot of a key, honouring a `{hash tag}`. */
  export default function calculateSlot(key: string | Buffer): number;
}
