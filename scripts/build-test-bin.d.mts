/** The test entry point, once built: dist-test/spark-test-bin.js. */
export declare const testBinPath: string;
/** Builds the test entry point; resolves with its path. */
export declare function buildTestBin(): Promise<string>;
/** The test entry point, built first when it is missing or older than one of its sources. */
export declare function ensureTestBin(): Promise<string>;
