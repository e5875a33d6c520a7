export * from './foundation';
export * from './records';
export * from './listing';
