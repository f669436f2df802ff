// A fault window as the nemesis recorded it (faults.jsonl): what the checkers that allow for
// faults (durability, liveness, leader changes, followers behind, waits) read.

export interface FaultRecord {
  variant: string;
  detail: string;
  start: number;
  /** when the heal finished */
  end: number;
  /** a node's clock ran at this rate from start to end (the `clock` fault) */
  clock?: { node: string; rate: number };
  /** the injection failed part way (what it did is still a fault window) */
  failed?: boolean;
}
