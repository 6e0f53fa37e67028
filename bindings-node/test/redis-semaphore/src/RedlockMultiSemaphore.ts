import m from './underTest'
export default m.RedlockMultiSemaphore
