import { Migration0001Initial } from './0001_initial.js';

/**
 * Migrations in the order they apply. The name is what the migrations table records, so a name
 * never changes once released; new migrations are appended with the next free number.
 */
export const migrationsList = [{ name: '0001_initial', class: Migration0001Initial }];
