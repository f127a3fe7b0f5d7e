/**
 * Imported first by tests that check colours: chalk decides its colour level when it is loaded,
 * from the real stdout, which is not a terminal under vitest.
 */
process.env.FORCE_COLOR = "1";
