export * from './foundation';
export * from './records';
