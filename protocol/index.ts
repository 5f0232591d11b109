export * from './auth.js';
export * from './errors.js';
export * from './frames.js';
export * from './users.js';
