// Placeholder until the handler lands; the route table and the stack already point here.
export const handler = async (): Promise<never> => {
  throw new Error('not implemented');
};
