/**
 * The quantities a billed provider input key sets. A module of its own because both the billed-key
 * lists (`billed-keys.ts`) and the provider profiles (`profiles/profile.ts`, which name the keys their
 * upstream sends each quantity under) need the type, and `billed-keys.ts` reads the profiles' mappings:
 * kept in either, the two would import each other.
 */

/** What a billed key sets. */
export type BilledQuantity = 'outputCount' | 'width' | 'height' | 'resolution' | 'duration' | 'size';

/** Provider input keys per billed quantity (spellings as upstream APIs use them; matched loosely). */
export type BilledInputKeys = Readonly<Record<BilledQuantity, readonly string[]>>;
