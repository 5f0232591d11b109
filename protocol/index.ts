export * from './errors.js';
export * from './frames.js';
