/**
 * The two scales of the race, bookkeeping and property tests. `npm test` runs them at a scale that
 * still races (tens of racers through the conflict layer, hundreds of ledger entries), so
 * the whole suite fits its 15 minutes on two cores; `npm run test:stress` (bin/test-stress.cjs sets
 * TEST_SCALE=stress) runs the same tests at full scale: hundreds of racers, thousands of ledger
 * entries, ten times the property runs. Run it before calling a change to money, dispatch or keys done.
 */

/** True under `npm run test:stress`. */
export const STRESS = process.env.TEST_SCALE === 'stress';

/** `normal` in `npm test`, `stress` under `npm run test:stress`. */
export function atScale(normal: number, stress: number): number {
  return STRESS ? stress : normal;
}
