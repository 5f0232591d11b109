export * from './auth.js';
export * from './client.js';
export * from './errors.js';
export * from './frames.js';
export * from './presence.js';
export * from './profiles.js';
export * from './users.js';
