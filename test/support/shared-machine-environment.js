/**
 * The suite's test environment: jest's Node environment, entered only with one of the machine's test
 * slots held (test/support/machine-slots.js), and left giving it back.
 */
const { TestEnvironment } = require('jest-environment-node');
const { acquireMachineSlot } = require('./machine-slots');

class SharedMachineEnvironment extends TestEnvironment {
  async setup() {
    this.machineSlot = await acquireMachineSlot();
    await super.setup();
  }

  async teardown() {
    try {
      await super.teardown();
    } finally {
      this.machineSlot?.release();
    }
  }
}

module.exports = SharedMachineEnvironment;
