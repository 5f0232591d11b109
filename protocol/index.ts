export * from './client.js';
export * from './documents.js';
export * from './errors.js';
export * from './frames.js';
export * from './operation.js';
// Each domain's schemas and operations are exported through the catalogue.
export * from './operations.js';
export * from './socket.js';
export * from './text.js';
