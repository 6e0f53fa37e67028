// Stops and starts the test servers, as redis-semaphore's own test/shell.ts does with docker
// compose: here by asking run.mjs, which started them, over the IPC channel it forked mocha
// with. `downRedisServer(n)` kills server n by PID and returns once its port refuses;
// `upRedisServer(n)` starts it again, empty, on the same port, and returns once it answers.
declare const process: {
  send(message: unknown): void
  on(event: 'message', listener: (message: any) => void): void
  removeListener(event: 'message', listener: (message: any) => void): void
}

let next = 0

function ask(action: 'up' | 'down', num: number): Promise<void> {
  const id = ++next
  return new Promise((resolve, reject) => {
    const listener = (message: any) => {
      if (message?.id !== id) return
      process.removeListener('message', listener)
      if (message.error) reject(new Error(message.error))
      else resolve()
    }
    process.on('message', listener)
    process.send({ id, action, num })
  })
}

export function upRedisServer(num: number): Promise<void> {
  return ask('up', num)
}

export function downRedisServer(num: number): Promise<void> {
  return ask('down', num)
}
