// The package entry point (package.json "main"): the client SDK.
export * from './client/index.js';
